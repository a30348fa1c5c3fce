"""Token labels measured in terminal cells, so Korean (two cells a syllable) lines up."""

from __future__ import annotations

from rich.cells import cell_len, set_cell_size

from attn_tui.present.text import printable


def fit_label(label: str, width: int) -> str:
    """Cut `label` to at most `width` cells, marking a cut with '…'; pad to exactly `width`.

    Control characters are drawn as visible symbols, never sent to the terminal.
    """
    label = printable(label)
    if cell_len(label) <= width:
        return label + " " * (width - cell_len(label))
    return set_cell_size(label, width - 1) + "…"
