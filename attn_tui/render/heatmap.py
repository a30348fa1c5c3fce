"""Heatmap lines as Rich segments: labelled value cells, or dense half-blocks for large matrices.

Everything works one terminal line at a time and only on the columns asked for, so a
widget can draw what is visible and nothing else. Widths are terminal cells
(`rich.cells`), never characters: Korean tokens are two cells wide.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from rich.cells import cell_len, set_cell_size
from rich.color import Color
from rich.segment import Segment
from rich.style import Style

from attn_tui.present.grid import Grid

if TYPE_CHECKING:
    import numpy as np
from attn_tui.render.colors import MASKED_STYLE, Scale, format_value

DENSE_AT = 33  # a matrix with this many rows or columns is drawn in half-blocks
VALUE_WIDTH = 6  # narrower cells show colour only
MAX_CELL_WIDTH = 9
MAX_LABEL_WIDTH = 12
HATCH = "░"
LABEL_STYLE = Style(color="grey70")
CURSOR_LABEL_STYLE = Style(color="black", bgcolor="yellow", bold=True)
SPECIAL_LABEL_STYLE = Style(color="grey50", italic=True)  # a model's [CLS], [SEP], <|endoftext|>
CURSOR_STYLE = Style(bold=True, reverse=True)
CURSOR_COLOR = Color.from_rgb(255, 255, 255)


def grid_scale(grid: Grid) -> Scale:
    """The colour scale of a grid: [0, 1] for probabilities, symmetric about 0 for signed values."""
    lo, hi = grid.finite_range()
    return Scale.fit(lo, hi, probability=grid.probability)


@dataclass(frozen=True)
class Layout:
    """How a grid is laid out in cells: label column, cell width, header and data lines."""

    dense: bool
    label_width: int
    cell_width: int
    header_height: int
    lines: int
    show_values: bool
    cols: int

    @property
    def width(self) -> int:
        return self.label_width + self.content_width

    @property
    def content_width(self) -> int:
        return self.cols * self.cell_width


def layout_for(grid: Grid, available: int) -> Layout:
    """Values mode when the matrix is small enough, dense half-blocks otherwise.

    Values mode widens cells to fit the longest column label, narrows them to colour
    only when that keeps the whole matrix in view, and scrolls when even that cannot.
    """
    if max(grid.rows, grid.cols) >= DENSE_AT:
        label = len(str(max(grid.rows - 1, 0))) + 2
        return Layout(True, label, 1, 1, (grid.rows + 1) // 2, False, grid.cols)
    label = min(MAX_LABEL_WIDTH, max([cell_len(t) for t in grid.row_labels] + [1])) + 1
    longest = max([cell_len(t) for t in grid.col_labels] + [1]) + 1
    ideal = max(VALUE_WIDTH, min(MAX_CELL_WIDTH, longest))
    cols = max(1, grid.cols)
    fit = (available - label) // cols
    if fit >= ideal:
        width = ideal
    elif fit >= VALUE_WIDTH:
        width = VALUE_WIDTH
    elif fit >= 3:
        width = fit  # colour only, but the whole matrix in view
    else:
        width = VALUE_WIDTH  # too many columns even for colour: scroll instead
    return Layout(False, label, width, 1, grid.rows, width >= VALUE_WIDTH, grid.cols)


def _fit(text: str, width: int, align: str) -> str:
    """Text padded or cut to exactly `width` cells."""
    if cell_len(text) > width:
        return set_cell_size(text, width)
    pad = width - cell_len(text)
    if align == "right":
        return " " * pad + text
    left = pad // 2
    return " " * left + text + " " * (pad - left)


def header_segments(grid: Grid, layout: Layout, first: int, last: int, cursor_col: int | None) -> list[Segment]:
    """Column labels for columns first..last-1 (values mode) or tick marks (dense mode)."""
    segments: list[Segment] = []
    if layout.dense:
        text = "".join("│" if j % 10 == 0 else ("┊" if j % 5 == 0 else " ") for j in range(first, last))
        marks = list(text)
        for j in range(first, last):
            if j % 10 == 0:
                label = str(j)
                for n, ch in enumerate(label):
                    if j - first + n < len(marks):
                        marks[j - first + n] = ch
        for n, ch in enumerate(marks):
            style = CURSOR_LABEL_STYLE if cursor_col == first + n else LABEL_STYLE
            segments.append(Segment(ch, style))
        return segments
    for j in range(first, last):
        style = CURSOR_LABEL_STYLE if j == cursor_col else (
            SPECIAL_LABEL_STYLE if j in grid.special_cols else LABEL_STYLE)
        segments.append(Segment(_fit(grid.col_labels[j], layout.cell_width - 1, "center") + " ", style))
    return segments


def corner_segment(grid: Grid, layout: Layout) -> Segment:
    return Segment(_fit(f"{grid.row_axis[:1]}\\{grid.col_axis[:1]}", layout.label_width - 1, "right") + " ",
                   LABEL_STYLE)


def label_segment(grid: Grid, layout: Layout, line: int, cursor_row: int | None) -> Segment:
    """The row label of a data line; dense lines carry two rows and show the first index."""
    if layout.dense:
        top = line * 2
        hit = cursor_row is not None and cursor_row in (top, top + 1)
        text = _fit(str(top), layout.label_width - 1, "right") + " "
        return Segment(text, CURSOR_LABEL_STYLE if hit else LABEL_STYLE)
    style = CURSOR_LABEL_STYLE if line == cursor_row else (
        SPECIAL_LABEL_STYLE if line in grid.special_rows else LABEL_STYLE)
    return Segment(_fit(grid.row_labels[line], layout.label_width - 1, "right") + " ", style)


def cell_segment(value: float, masked: bool, blank: bool, scale: Scale, layout: Layout, cursor: bool) -> Segment:
    """One values-mode cell: its colour, its value when wide enough, hatching when masked."""
    width = layout.cell_width
    if blank:
        return Segment("·".center(width) if cursor else " " * width, CURSOR_STYLE if cursor else LABEL_STYLE)
    if masked:
        text = format_value(value, width - 2) if layout.show_values else ""
        pad = width - cell_len(text)
        cell = HATCH * (pad // 2) + text + HATCH * (pad - pad // 2)
        return Segment(cell, MASKED_STYLE + CURSOR_STYLE if cursor else MASKED_STYLE)
    style = scale.style(value)
    text = _fit(format_value(value, width - 1), width - 1, "right") + " " if layout.show_values else " " * width
    if cursor:
        text = "▶" + text[1:] if text.startswith(" ") else text
        return Segment(text, _cursor_style(style))
    return Segment(text, style)


@lru_cache(maxsize=512)
def _cursor_style(style: Style) -> Style:
    return style + CURSOR_STYLE


@lru_cache(maxsize=4096)
def _half_style(top: Color | None, bottom: Color | None) -> Style:
    return Style(color=top, bgcolor=bottom)


def _colors(values: np.ndarray, hidden: np.ndarray | None, blank: bool, scale: Scale) -> list[Color | None]:
    if blank:
        return [None] * len(values)
    return [MASKED_STYLE.bgcolor if hidden is not None and hidden[n] else scale.style(float(v)).bgcolor
            for n, v in enumerate(values)]


def line_segments(grid: Grid, scale: Scale, layout: Layout, line: int, first: int, last: int,
                  cursor: tuple[int, int] | None) -> list[Segment]:
    """Matrix cells of one data line for columns first..last-1 (no label); reads only those cells."""
    if not layout.dense:
        values = grid.block(line, line + 1, first, last)[0]
        hidden = grid.masked_block(line, line + 1, first, last)
        blank = grid.is_blank(line)
        return [cell_segment(float(values[n]), hidden is not None and bool(hidden[0, n]), blank, scale, layout,
                             cursor == (line, first + n)) for n in range(last - first)]
    top, bottom = line * 2, min(line * 2 + 2, grid.rows)
    values = grid.block(top, bottom, first, last)  # (1 or 2, cols)
    hidden = grid.masked_block(top, bottom, first, last)
    rows = [_colors(values[r], None if hidden is None else hidden[r], grid.is_blank(top + r), scale)
            for r in range(values.shape[0])]
    if len(rows) == 1:
        rows.append([None] * (last - first))
    segments = []
    for n in range(last - first):
        if hidden is not None and bool(hidden[:, n].all()):
            segments.append(Segment(HATCH, MASKED_STYLE))
            continue
        top_color, bottom_color = rows[0][n], rows[1][n]
        if cursor is not None and cursor[1] == first + n:
            if cursor[0] == top:
                top_color = CURSOR_COLOR
            elif cursor[0] == top + 1:
                bottom_color = CURSOR_COLOR
        segments.append(Segment("▀", _half_style(top_color, bottom_color)))
    return segments


def block_lines(grid: Grid, cell_width: int = 2) -> list[list[Segment]]:
    """The whole matrix as colour blocks, no labels: for the small multiples of the heads grid."""
    scale = grid_scale(grid)
    dense = grid.rows > 12
    layout = Layout(dense, 0, 1 if dense else cell_width, 0, (grid.rows + 1) // 2 if dense else grid.rows,
                    False, grid.cols)
    return [line_segments(grid, scale, layout, n, 0, grid.cols, None) for n in range(layout.lines)]
