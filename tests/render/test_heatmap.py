"""The heatmap's lines: aligned in terminal cells, masked/-∞/NaN marked apart, only visible columns built."""

from __future__ import annotations

import math

from rich.cells import cell_len
from rich.segment import Segment

from attn_tui.present.grid import Grid
from attn_tui.render.colors import MASKED_STYLE, NAN_STYLE, NEG_INF_STYLE
from attn_tui.render.heatmap import (
    HATCH,
    block_lines,
    grid_scale,
    header_segments,
    label_segment,
    layout_for,
    line_segments,
)
from attn_tui.render.legend import legend


def _text(segments: list[Segment]) -> str:
    return "".join(s.text for s in segments)


def _grid(**kw) -> Grid:
    values = kw.pop("values", [[0.1, -0.5, 0.9], [float("-inf"), float("nan"), 0.0], [1.0, 2.0, 3.0]])
    return Grid(values, ("나는", "학교에", "간다"), ("나는", "학교에", "간다"), "query", "key", **kw)


def test_korean_labels_align_in_cells() -> None:
    grid = _grid()
    lay = layout_for(grid, 80)
    scale = grid_scale(grid)
    widths = {cell_len(_text([label_segment(grid, lay, n, None)] + line_segments(grid, scale, lay, n, 0, 3, None)))
              for n in range(3)}
    header = cell_len(_text(header_segments(grid, lay, 0, 3, None)))
    assert len(widths) == 1 and widths.pop() == lay.width
    assert header == lay.content_width and lay.show_values


def test_special_values_have_their_own_marks() -> None:
    grid = _grid(masked=[[False, True, False], [False, False, False], [False, False, False]])
    lay = layout_for(grid, 80)
    row0 = line_segments(grid, grid_scale(grid), lay, 0, 0, 3, None)
    row1 = line_segments(grid, grid_scale(grid), lay, 1, 0, 3, None)
    assert HATCH in row0[1].text and row0[1].style == MASKED_STYLE
    assert "-∞" in row1[0].text and row1[0].style == NEG_INF_STYLE
    assert "NaN" in row1[1].text and row1[1].style == NAN_STYLE
    assert grid.marks() == {"masked", "-inf", "nan"}
    lo, hi = grid.finite_range()
    assert (lo, hi) == (0.0, 3.0)  # the masked -0.5 does not stretch the scale
    text = legend(grid_scale(grid), lo, hi, grid.marks()).plain
    assert "masked" in text and "-∞" in text and "NaN" in text and "3" in text


def test_dense_mode_packs_two_rows_per_line_and_builds_only_visible_columns() -> None:
    n = 70
    grid = Grid([[math.sin(i * j) for j in range(n)] for i in range(n)], tuple(map(str, range(n))),
                tuple(map(str, range(n))))
    lay = layout_for(grid, 60)
    assert lay.dense and lay.lines == 35 and lay.cell_width == 1
    segments = line_segments(grid, grid_scale(grid), lay, 3, 10, 40, (7, 12))
    assert len(segments) == 30 and all(s.text == "▀" for s in segments)
    cursor = segments[2]
    assert cursor.style.bgcolor.triplet == (255, 255, 255)  # row 7 is the bottom half of line 3


def test_narrow_space_drops_values_but_keeps_colour() -> None:
    grid = Grid([[0.5] * 12 for _ in range(4)], tuple("abcd"), tuple(f"k{j}" for j in range(12)))
    lay = layout_for(grid, 50)
    assert not lay.show_values and lay.cell_width >= 3


def test_small_multiples_blocks() -> None:
    lines = block_lines(_grid())
    assert len(lines) == 3 and all(len(line) == 3 for line in lines)


def test_rows_not_reached_yet_are_blank_and_left_out_of_the_scale() -> None:
    grid = _grid(values=[[0.1, 0.2, 0.7], [0.5, 0.25, 0.25], [9.0, 9.0, 9.0]], filled_rows=2)
    lay = layout_for(grid, 80)
    cells = line_segments(grid, grid_scale(grid), lay, 2, 0, 3, None)
    assert _text(cells).strip() == "" and cell_len(_text(cells)) == 3 * lay.cell_width
    assert grid.finite_range() == (0.1, 0.7)  # the unreached row's 9s do not stretch the colours
    assert _text(line_segments(grid, grid_scale(grid), lay, 1, 0, 3, None)).strip() != ""


def test_special_token_labels_are_dimmed() -> None:
    from attn_tui.render.heatmap import LABEL_STYLE, SPECIAL_LABEL_STYLE

    grid = _grid(special_rows=frozenset({0}), special_cols=frozenset({2}))
    lay = layout_for(grid, 80)
    assert label_segment(grid, lay, 0, None).style == SPECIAL_LABEL_STYLE
    assert label_segment(grid, lay, 1, None).style == LABEL_STYLE
    header = header_segments(grid, lay, 0, 3, None)
    assert [s.style == SPECIAL_LABEL_STYLE for s in header] == [False, False, True]
