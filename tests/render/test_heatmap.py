"""The heatmap's lines: aligned in terminal cells, masked/-∞/NaN marked apart, only visible columns built."""

from __future__ import annotations

import math

from rich.cells import cell_len
from rich.segment import Segment

from attn_tui.present.grid import Grid
from attn_tui.render.colors import MASKED_STYLE, NAN_STYLE, NEG_INF_STYLE
from attn_tui.render.heatmap import (
    CURSOR_LABEL_STYLE,
    HATCH,
    grid_scale,
    header_lines,
    label_segment,
    layout_for,
    line_segments,
    small_multiple,
    stage_digits,
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
    header = [cell_len(_text(line)) for line in header_lines(grid, lay, 0, 3, None)]
    assert len(widths) == 1 and widths.pop() == lay.width
    assert set(header) == {lay.content_width} and lay.show_values


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


def test_many_columns_are_colour_cells_one_row_a_line_and_only_visible_columns_are_built() -> None:
    n = 70
    grid = Grid([[math.sin(i * j) for j in range(n)] for i in range(n)], tuple(f"w{i}" for i in range(n)),
                tuple(f"w{i}" for i in range(n)))
    lay = layout_for(grid, 60)
    assert not lay.show_values and lay.lines == n and lay.cell_width == 1
    segments = line_segments(grid, grid_scale(grid), lay, 7, 10, 40, (7, 12))
    assert len(segments) == 30 and all(cell_len(s.text) == 1 for s in segments)
    assert segments[2].text == "▶"  # the cursor's cell
    assert label_segment(grid, lay, 7, 7).text.strip() == "w7"  # every row has its own label


def test_column_labels_fit_greedily_and_the_cursor_column_is_always_labelled() -> None:
    n = 60
    labels = tuple(f"token{j}" for j in range(n))
    grid = Grid([[0.0] * n for _ in range(3)], ("a", "b", "c"), labels)
    lay = layout_for(grid, 60)
    for cursor in (0, 13, 37, 59):
        lines = header_lines(grid, lay, 0, n, cursor)
        assert {cell_len(_text(line)) for line in lines} == {n * lay.cell_width}
        shown = [s for line in lines for s in line if s.style == CURSOR_LABEL_STYLE]
        assert len(shown) == 1 and shown[0].text == f"token{cursor}"
        placed = [s.text for line in lines for s in line if s.text.startswith("token")]
        assert len(placed) >= 6 and len(set(placed)) == len(placed)  # several labels, none twice


def test_values_mode_cuts_long_labels_and_writes_the_cursors_whole() -> None:
    grid = Grid([[0.25, 0.5], [0.125, 1.0]], ("x", "y"), ("elephants", "[SEP]"))
    lay = layout_for(grid, 16)  # two columns of seven cells: 'elephants' is cut in its cell
    assert lay.show_values and lay.header_height == 2
    first, second = header_lines(grid, lay, 0, 2, 0)
    assert "elep…" in _text(first)
    assert any(s.text == "elephants" and s.style == CURSOR_LABEL_STYLE for s in second)


def test_one_precision_for_the_whole_stage() -> None:
    grid = _grid(values=[[0.123456, 12.5, -3.0], [0.5, 0.25, 0.0], [1.0, 2.0, 3.0]])
    lay = layout_for(grid, 80)
    assert lay.digits == stage_digits(-3.0, 12.5, lay.cell_width - 1)
    texts = [_text([s]).strip() for row in range(3) for s in line_segments(grid, grid_scale(grid), lay, row, 0, 3,
                                                                          None)]
    decimals = {len(t.split(".")[1]) for t in texts if "." in t}
    assert len(decimals) == 1  # 0.12, 12.50, -3.00 …: the same number of decimals everywhere


def test_narrow_space_keeps_the_numbers_and_scrolls_instead_of_turning_to_colour_only() -> None:
    grid = Grid([[0.5 + j for j in range(12)] for _ in range(4)], tuple("abcd"), tuple(f"k{j}" for j in range(12)))
    lay = layout_for(grid, 50)  # 12 columns of 6 cells do not fit in 50
    assert lay.show_values and lay.cell_width == 6 and lay.width > 50
    cells = line_segments(grid, grid_scale(grid), lay, 0, 7, 9, None)  # two columns far right, and only those
    assert [_text([s]).strip() for s in cells] == ["7.50", "8.50"]
    header = header_lines(grid, lay, 7, 9, None)
    assert _text(header[0]).split() == ["k7", "k8"]  # the columns scrolled to keep their labels


def test_small_multiples_carry_token_labels_and_a_given_scale() -> None:
    from attn_tui.render.colors import Scale

    shared = Scale.fit(0.0, 1.0, probability=True)
    lines = small_multiple(_grid(), shared)
    assert len(lines) == 2 + 3  # two header lines of column labels, then one line per row
    header = _text(lines[0]) + _text(lines[1])
    assert all(token in header for token in ("나는", "학교에", "간다")) and _text(lines[2]).strip().startswith("나는")
    own = small_multiple(_grid(), grid_scale(_grid()))
    assert [s.style for s in lines[4][1:]] != [s.style for s in own[4][1:]]  # the scale decides the colours


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
    header = header_lines(grid, lay, 0, 3, None)[0]
    assert [s.style == SPECIAL_LABEL_STYLE for s in header] == [False, False, True]
