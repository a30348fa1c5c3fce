"""A whole transformer at a glance: layers down, heads across, each head a tiny heatmap with its numbers.

Each head is drawn in half-blocks (two query rows per line, one cell per key) so 12 heads
fit across a terminal for a short sentence; under it three captions: H (mean entropy in
nats), ^ (each row's largest weight, averaged) and ⇤ (share of attention on the first token).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Group
from rich.style import Style
from rich.table import Table
from rich.text import Text

from attn_tui.present.grid import Grid
from attn_tui.render.colors import MASKED_STYLE
from attn_tui.render.heatmap import grid_scale

CURRENT_STYLE = "bold black on yellow"
CAPTION_WIDTH = 5  # "H1.23"
LABEL_WIDTH = 4  # "L11" and its padding


def half_block_lines(grid: Grid) -> list[Text]:
    """A thumbnail: the matrix as ▀ cells, two rows a line, no labels (the heatmap itself names every token)."""
    scale = grid_scale(grid)
    values, hidden = grid.values, grid.masked_block(0, grid.rows, 0, grid.cols)
    lines = []
    for top in range(0, grid.rows, 2):
        text = Text(no_wrap=True)
        for j in range(grid.cols):
            colors = [MASKED_STYLE.bgcolor if hidden is not None and hidden[r, j] else scale.style(values[r, j]).bgcolor
                      for r in range(top, min(top + 2, grid.rows))]
            text.append("▀", Style(color=colors[0], bgcolor=colors[1] if len(colors) > 1 else None))
        lines.append(text)
    return lines


def captions(cell: Any) -> list[str]:
    return [f"H{cell.entropy:.2f}", f"^{cell.max_weight:.2f}", f"⇤{cell.first_share:.2f}"]


def _cell_width(cells: Sequence[Any]) -> int:
    return max(CAPTION_WIDTH, cells[0].grid.cols if cells else 1)


def _label_width(notes: Sequence[str]) -> int:
    """The layer column: `L11`, or wider where a layer's note (its window, `w4096`) needs it."""
    return max([LABEL_WIDTH - 1, *(cell_len(note) for note in notes)])


def grid_width(cells: Sequence[Any], heads: int, notes: Sequence[str] = ()) -> int:
    """Terminal cells the table needs so no head is cut: the layer column plus one column a head."""
    return _label_width(notes) + 3 + heads * (_cell_width(cells) + 2)  # + right padding + the box's divider


def model_grid_table(cells: Sequence[Any], layers: int, heads: int, current: tuple[int, int],
                     notes: Sequence[str] = ()) -> Table:
    """cells: layer-major objects with .layer, .head, .grid, .entropy, .max_weight, .first_share; notes: a line
    under each layer's label (its sliding window), "" for none."""
    width = _cell_width(cells)
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False, pad_edge=False)
    table.add_column("", justify="right", no_wrap=True, width=_label_width(notes))
    for h in range(heads):
        table.add_column(Text(f"h{h}", style="bold yellow" if h == current[1] else "bold"), width=width,
                         no_wrap=True)
    for layer in range(layers):
        label = Text(f"L{layer}", style=CURRENT_STYLE if layer == current[0] else "bold")
        note = notes[layer] if layer < len(notes) else ""
        row: list[Any] = [Group(label, Text(note, style="cyan")) if note else label]
        for h in range(heads):
            cell = cells[layer * heads + h] if len(cells) == layers * heads else next(
                (c for c in cells if (c.layer, c.head) == (layer, h)), None)
            if cell is None:  # a head this layer lacks (a Qwen3-Next full layer beside wider linear ones): blank
                row.append("")
                continue
            style = CURRENT_STYLE if (layer, h) == current else "grey70"
            row.append(Group(*half_block_lines(cell.grid), *(Text(c, style=style) for c in captions(cell))))
        table.add_row(*row, end_section=True)
    return table
