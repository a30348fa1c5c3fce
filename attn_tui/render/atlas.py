"""The head atlas drawn with Rich: the layers × heads grid coloured by role, the ranking list and the legend.

One colour per role; a cell's background runs from dark to the role's full colour with its score, so a
strong head stands out in its own colour and a filtered role's score is read across the whole grid.
"""

from __future__ import annotations

from functools import lru_cache

from rich import box
from rich.cells import cell_len
from rich.color import Color
from rich.columns import Columns
from rich.style import Style
from rich.table import Table
from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.atlas import (
    MIXED,
    MOVED,
    ROLES,
    THRESHOLDS,
    Atlas,
    AtlasPosition,
    ShownCell,
    code,
    legend_rows,
    title,
)

ROLE_RGB = {"previous_token": (215, 135, 0), "duplicate_token": (175, 95, 215), "induction": (215, 0, 95),
            "sink": (95, 135, 215), "local": (95, 175, 95), "broad": (0, 175, 175), MIXED: (88, 88, 88)}
BASE_RGB = (28, 28, 28)  # a score of 0
CURRENT = Style(bold=True, underline=True, color="black", bgcolor="yellow")
LABEL_WIDTH = 4  # "L29 "
LEVELS = 20  # colour steps a role's background takes


def cell_width() -> int:
    """Terminal cells one head takes: the widest code (two cells in English and Korean), a three-character
    score and a gap."""
    return max(cell_len(code(r)) for r in (*ROLES, MIXED)) + 4


@lru_cache(maxsize=len(ROLE_RGB) * (LEVELS + 1) * 2)
def _style(colour: str, level: int, dim: bool) -> Style:
    t = level / LEVELS * (0.5 if dim else 1.0)
    rgb = tuple(round(b + (c - b) * t) for b, c in zip(BASE_RGB, ROLE_RGB[colour], strict=True))
    text = "grey50" if dim else ("black" if t > 0.55 else "white")
    return Style(color=text, bgcolor=Color.from_rgb(*rgb), bold=not dim)


def cell_style(cell: ShownCell) -> Style:
    """A role's colour at the cell's strength (unfiltered cells at least half-strength: their role is the news)."""
    strength = min(1.0, max(0.0, cell.strength))
    return _style(cell.colour, round(strength * LEVELS), cell.dim)


def _cell_text(cell: ShownCell, current: bool, width: int) -> Text:
    body = cell.code + cell.text
    pad = " " * max(0, width - 1 - cell_len(body))
    return Text.assemble((body + pad, CURRENT if current else cell_style(cell)), " ")


def grid_header(atlas: Atlas, position: AtlasPosition, show_cursor: bool = True) -> Text:
    """The heads' names over the grid's columns, drawn apart so that it stays put while the rows scroll."""
    width = cell_width()
    text = Text(" " * LABEL_WIDTH, no_wrap=True)
    for h in range(atlas.heads):
        name = f"h{h}"
        text.append(name.ljust(width), "bold yellow" if show_cursor and h == position.head else "bold")
    return text


def atlas_grid(atlas: Atlas, position: AtlasPosition, show_cursor: bool = True) -> Table:
    """Layers down, heads across (their names: `grid_header`); each cell its role's code and score."""
    width = cell_width()
    table = Table(box=None, padding=0, show_edge=False, pad_edge=False, show_header=False)
    table.add_column("", no_wrap=True, width=LABEL_WIDTH)
    for _h in range(atlas.heads):
        table.add_column("", width=width, no_wrap=True)
    for layer in range(atlas.layers):
        here = show_cursor and layer == position.layer
        row: list[Text] = [Text(f"L{layer}", style="bold yellow" if here else "bold")]
        for h in range(atlas.heads):
            shown = atlas.cell(layer, h).shown(position.role)
            row.append(_cell_text(shown, here and h == position.head, width))
        table.add_row(*row)
    return table


def ranking_table(atlas: Atlas, position: AtlasPosition, show_cursor: bool = True) -> Table:
    """Every head by the filtered role's score (no filter: by how far its own strongest role stands above its
    threshold, score ÷ threshold, shown in a column of its own), top heads first; each row says the head's own
    role."""
    role = position.role
    by_moved = position.by_moved and atlas.has_moved
    over = role is None and not by_moved  # sorted by score ÷ threshold: that number is shown too
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1, 0, 0), show_edge=False, pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column(_("head"), no_wrap=True)
    table.add_column(_("its role"), no_wrap=True)
    table.add_column(_("moved") if position.by_moved and atlas.has_moved else _("score"), justify="right",
                     no_wrap=True)
    if over:
        table.add_column(_("÷ threshold"), justify="right", no_wrap=True)
    table.add_column("", no_wrap=True, width=10)
    most = max((c.moved or 0.0 for c in atlas.cells), default=0.0) or 1.0  # a `moved` bar: its share of the top
    for rank, cell in enumerate(atlas.ranking(MOVED if by_moved else role), start=1):
        shown = cell.shown(None)
        value = (cell.moved or 0.0) if by_moved else cell.scores[role] if role else cell.score
        current = show_cursor and (cell.layer, cell.head) == (position.layer, position.head)
        style = CURRENT if current else Style()
        bar = "█" * round(min(1.0, max(0.0, value / most if by_moved else value)) * 10)
        ratio = [Text(f"{cell.score / THRESHOLDS[cell.leaning]:.2f}", style=style, justify="right")] if over else []
        table.add_row(Text(str(rank), style=style, justify="right"), Text(f"L{cell.layer} h{cell.head}", style=style),
                      Text(f"{shown.code} {title(cell.role)}", style=cell_style(shown)),
                      Text(f"{value:.2f}" if by_moved else f"{value:.3f}", style=style, justify="right"), *ratio,
                      Text(bar, style=Style(color=Color.from_rgb(*ROLE_RGB[role or cell.leaning]))))
    return table


def legend(atlas: Atlas | None = None, b: Atlas | None = None) -> Columns:
    """Each role's colour, code, name and threshold (and how many heads read as it: A's, then B's when B stands
    beside it), then mixed; laid out in columns so no entry is split across lines."""
    counts = atlas.counts() if atlas is not None else None
    b_counts = b.counts() if b is not None else None
    entries = []
    for role, role_code, name, threshold in legend_rows():
        text = Text(no_wrap=True)
        text.append(f"{role_code}", _style(role, LEVELS, False))
        text.append(f" {name}" + (f" {threshold}" if threshold else ""))
        if counts is not None and b_counts is not None:
            text.append(f" (A {counts[role]} · B {b_counts[role]})", "dim")
        elif counts is not None:
            text.append(f" ({counts[role]})", "dim")
        entries.append(text)
    return Columns(entries, padding=(0, 2))
