"""Heatmap lines as Rich segments: one matrix row per terminal line, every row and visible column labelled.

Everything works one terminal line at a time and only on the columns asked for, so a
widget can draw what is visible and nothing else. Widths are terminal cells
(`rich.cells`), never characters: Korean tokens are two cells wide.

Two kinds of cell: values (the number on its colour) when the columns are few enough to
read, scrolling sideways when the pane is narrower than they are, and colour only (one to
five cells wide) when there are too many to read. Either way each row has its
label; column labels go in a header of one or two lines, placed greedily where they fit,
the cursor's column always first and whole.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style

from attn_tui.present.grid import Grid
from attn_tui.render.colors import MASKED_STYLE, Scale, format_value

if TYPE_CHECKING:
    import numpy as np

VALUES_UP_TO = 32  # columns drawn with their values (more: colour only)
VALUE_WIDTH = 6  # narrower cells show colour only
MAX_CELL_WIDTH = 9
MAX_LABEL_WIDTH = 12  # cells of a row label; the inspector shows the whole token
MAX_HEADER_LABEL = 12  # cells of a column label placed in the header
HATCH = "░"
LABEL_STYLE = Style(color="grey70")
CURSOR_LABEL_STYLE = Style(color="black", bgcolor="yellow", bold=True)
SPECIAL_LABEL_STYLE = Style(color="grey50", italic=True)  # a model's [CLS], [SEP], <|endoftext|>
PAD_LABEL_STYLE = Style(color="grey42", strike=True)  # a key that the padding mask hides
MISS_LABEL_STYLE = Style(color="bright_red", bold=True)  # a decoder output that differs from its target
CURSOR_STYLE = Style(bold=True, reverse=True)


@lru_cache(maxsize=16)
def widest(labels: tuple[str, ...]) -> int:
    """Terminal cells of the widest label (measured once per set of labels: stages share their axes)."""
    return max([cell_len(t) for t in labels] + [1])


def grid_scale(grid: Grid) -> Scale:
    """The colour scale of a grid, of its stage kind's scale: [0, 1] for probabilities, symmetric about 0 for
    signed values."""
    lo, hi = grid.finite_range()
    return Scale.fit(lo, hi, kind=grid.colour_scale)


@dataclass(frozen=True)
class Layout:
    """How a grid is laid out in cells: label column, cell width, header lines, data lines, number format."""

    label_width: int
    cell_width: int
    header_height: int
    lines: int
    show_values: bool
    cols: int
    digits: int | None = None  # decimals every value of the stage is written with (None: each its own)

    @property
    def width(self) -> int:
        return self.label_width + self.content_width

    @property
    def content_width(self) -> int:
        return self.cols * self.cell_width


def stage_digits(lo: float, hi: float, width: int) -> int | None:
    """One precision for a whole stage: the most decimals with which its largest finite value fits `width`."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or width < 1:
        return None
    biggest = max(abs(lo), abs(hi))
    whole = len(str(int(biggest))) + (1 if min(lo, hi) < 0 else 0)
    digits = width - whole - 1  # the point takes one cell
    return max(0, min(3, digits)) if digits >= 0 else None


def layout_for(grid: Grid, available: int) -> Layout:
    """Values when the columns are few enough to read, colour only otherwise; always one row per line.

    Values mode widens cells to fit the longest column label and, when the pane cannot
    hold every column, keeps the numbers and scrolls (the labels stay in place): a
    reader of a 32-wide query wants its numbers, not a colour-only strip of all of it.
    """
    label = min(MAX_LABEL_WIDTH, widest(grid.row_labels)) + 1
    cols = max(1, grid.cols)
    if grid.cols > VALUES_UP_TO:
        width = max(1, min(VALUE_WIDTH - 1, (available - label) // cols))
        return Layout(label, width, 2, grid.rows, False, grid.cols)
    longest = widest(grid.col_labels) + 1
    ideal = max(VALUE_WIDTH, min(MAX_CELL_WIDTH, longest))
    fit = (available - label) // cols
    width = ideal if fit >= ideal else VALUE_WIDTH  # narrower than the pane: numbers, scrolling
    header = 1 if longest <= width else 2  # a second line carries whole labels where they fit
    lo, hi = grid.finite_range()
    return Layout(label, width, header, grid.rows, True, grid.cols, stage_digits(lo, hi, width - 1))


def _fit(text: str, width: int, align: str) -> str:
    """Text padded or cut to exactly `width` cells; a cut is marked with '…'."""
    if width <= 0:
        return ""
    if cell_len(text) > width:
        return set_cell_size(text, width - 1) + "…" if width > 1 else set_cell_size(text, width)
    pad = width - cell_len(text)
    if align == "right":
        return " " * pad + text
    if align == "left":
        return text + " " * pad
    left = pad // 2
    return " " * left + text + " " * (pad - left)


def _label_style(grid: Grid, index: int, axis: str, cursor: bool) -> Style:
    if cursor:
        return CURSOR_LABEL_STYLE
    if axis == "col":
        if index in grid.pad_cols:
            return PAD_LABEL_STYLE
        return SPECIAL_LABEL_STYLE if index in grid.special_cols else LABEL_STYLE
    if index in grid.miss_rows:
        return MISS_LABEL_STYLE
    return SPECIAL_LABEL_STYLE if index in grid.special_rows else LABEL_STYLE


def header_lines(grid: Grid, layout: Layout, first: int, last: int, cursor_col: int | None) -> list[list[Segment]]:
    """The header's lines for columns first..last-1, each exactly (last - first) cells wide.

    Values mode writes every column's label in its cell (cut to fit) and, when a label
    was cut, the whole label of the cursor's column (and others where they fit) on a
    second line. Colour mode places whole labels greedily at their column, on two lines,
    the cursor's first; a column whose label found no room shows a tick.
    """
    width = (last - first) * layout.cell_width
    lines: list[list[tuple[int, str, Style]]] = [[] for _ in range(layout.header_height)]
    free = [[True] * width for _ in range(layout.header_height)]
    if layout.show_values:
        for j in range(first, last):
            text = _fit(grid.col_labels[j], layout.cell_width - 1, "center") + " "
            lines[0].append(((j - first) * layout.cell_width, text, _label_style(grid, j, "col", j == cursor_col)))
        free[0] = [False] * width
    order = ([cursor_col] if cursor_col is not None and first <= cursor_col < last else []) + [
        j for j in range(first, last) if j != cursor_col]
    for j in order:
        label = grid.col_labels[j]
        if layout.show_values and cell_len(label) + 1 <= layout.cell_width:
            continue  # already whole in its cell
        text = _fit(label, min(MAX_HEADER_LABEL, cell_len(label)), "left")
        x = (j - first) * layout.cell_width
        span = cell_len(text) + (1 if j != cursor_col else 0)  # a gap after each label but the cursor's
        x = min(x, max(0, width - cell_len(text)))
        for n in range(layout.header_height):
            if all(free[n][x:x + span]) and x + cell_len(text) <= width:
                lines[n].append((x, text, _label_style(grid, j, "col", j == cursor_col)))
                for k in range(x, min(width, x + span)):
                    free[n][k] = False
                break
    return [_segments(placed, width, free[n] if not layout.show_values or n else None, first, layout)
            for n, placed in enumerate(lines)]


def _segments(placed: list[tuple[int, str, Style]], width: int, free: list[bool] | None, first: int,
              layout: Layout) -> list[Segment]:
    """Placed labels on a line of `width` cells; free cells get a tick every fifth column in colour mode."""
    placed.sort(key=lambda item: item[0])
    out: list[Segment] = []
    x = 0
    for start, text, style in placed:
        if start > x:
            out.append(Segment(_ticks(x, start, first, layout, free), LABEL_STYLE))
        out.append(Segment(text, style))
        x = start + cell_len(text)
    if x < width:
        out.append(Segment(_ticks(x, width, first, layout, free), LABEL_STYLE))
    return out


def _ticks(x0: int, x1: int, first: int, layout: Layout, free: list[bool] | None) -> str:
    if free is None or layout.show_values or layout.cell_width > 1:
        return " " * (x1 - x0)
    return "".join("┊" if (first + x) % 5 == 0 and free[x] else " " for x in range(x0, x1))


def corner_segment(grid: Grid, layout: Layout) -> Segment:
    return Segment(_fit(f"{grid.row_axis[:1]}\\{grid.col_axis[:1]}", layout.label_width - 1, "right") + " ",
                   LABEL_STYLE)


def label_segment(grid: Grid, layout: Layout, line: int, cursor_row: int | None) -> Segment:
    """The row label of a data line, cut to the label column (the inspector names it whole)."""
    style = _label_style(grid, line, "row", line == cursor_row)
    return Segment(_fit(grid.row_labels[line], layout.label_width - 1, "right") + " ", style)


def format_cell(value: float, width: int, digits: int | None) -> str:
    """A value in a cell of `width` cells, at the stage's precision when it fits (fills, ∞ and NaN apart)."""
    if digits is not None and math.isfinite(value):
        text = f"{value:.{digits}f}"
        if len(text) <= width:
            return text
    return format_value(value, width)


def cell_segment(value: float, masked: bool, blank: bool, scale: Scale, layout: Layout, cursor: bool) -> Segment:
    """One cell: its colour, its value when wide enough, hatching when masked."""
    width = layout.cell_width
    if blank:
        return Segment("·".center(width) if cursor else " " * width, CURSOR_STYLE if cursor else LABEL_STYLE)
    if masked:
        text = format_cell(value, width - 2, layout.digits) if layout.show_values else ""
        pad = width - cell_len(text)
        cell = HATCH * (pad // 2) + text + HATCH * (pad - pad // 2)
        return Segment(cell, MASKED_STYLE + CURSOR_STYLE if cursor else MASKED_STYLE)
    style = scale.style(value)
    if layout.show_values:
        text = _fit(format_cell(value, width - 1, layout.digits), width - 1, "right") + " "
    else:
        text = ("▶" + " " * (width - 1)) if cursor else " " * width
    if cursor:
        text = "▶" + text[1:] if text.startswith(" ") else text
        return Segment(text, _cursor_style(style))
    return Segment(text, style)


@lru_cache(maxsize=512)
def _cursor_style(style: Style) -> Style:
    return style + CURSOR_STYLE


def line_segments(grid: Grid, scale: Scale, layout: Layout, line: int, first: int, last: int,
                  cursor: tuple[int, int] | None) -> list[Segment]:
    """Matrix cells of one data line for columns first..last-1 (no label); reads only those cells."""
    values: np.ndarray = grid.block(line, line + 1, first, last)[0]
    hidden = grid.masked_block(line, line + 1, first, last)
    blank = grid.is_blank(line)
    return [cell_segment(float(values[n]), hidden is not None and bool(hidden[0, n]), blank, scale, layout,
                         cursor == (line, first + n)) for n in range(last - first)]


def small_multiple(grid: Grid, scale: Scale, label_width: int = 6) -> list[list[Segment]]:
    """A whole small grid with its token labels, for the heads panel: two header lines, then one line per row.

    The scale is given, so every head can share one (weights on 0…1) or keep its own.
    Cells are as wide as a few columns allow, so more column labels find room.
    """
    cell_width = 3 if grid.cols <= 12 else 2 if grid.cols <= 24 else 1
    layout = Layout(label_width + 1, cell_width, 2, grid.rows, False, grid.cols)
    lines = [[Segment(" " * layout.label_width)] + line for line in header_lines(grid, layout, 0, grid.cols, None)]
    for row in range(grid.rows):
        lines.append([label_segment(grid, layout, row, None),
                      *line_segments(grid, scale, layout, row, 0, grid.cols, None)])
    return lines
