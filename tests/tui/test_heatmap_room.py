"""Numbers where there is room, labels always: a heatmap wider than its pane keeps its numbers and scrolls,
and its first row and column can always be scrolled back to (they once stayed under the labels)."""

from __future__ import annotations

import pytest

from attn_tui.tui.widgets.heatmap import Heatmap
from tests.tui.helpers import model_app, sample_app, settle

pytestmark = pytest.mark.slow


def _line(heatmap: Heatmap, y: int) -> str:
    return heatmap.render_line(y).text


async def test_the_first_row_comes_back_into_view_after_scrolling_away() -> None:
    app = sample_app("long_paragraph")
    async with app.run_test(size=(90, 30)) as pilot:
        await settle(pilot)
        await pilot.press("8")  # weights of 70-odd tokens, scrolled both ways
        heatmap = app.query_one(Heatmap)
        lay = heatmap.layout_info
        await pilot.press(*["down"] * 40, "shift+right")
        await pilot.pause()
        assert heatmap.scroll_offset.y > 0
        await pilot.press(*["up"] * 40, "shift+left")
        await pilot.pause()
        assert app.cursor == (0, 0) and tuple(heatmap.scroll_offset) == (0, 0)
        first = app.trace.query_tokens[0]
        assert _line(heatmap, lay.header_height)[:lay.label_width].strip() == first[:lay.label_width - 1]
        assert "▶" in _line(heatmap, lay.header_height)[lay.label_width:lay.label_width + lay.cell_width]


async def test_a_query_wider_than_its_pane_keeps_its_numbers_and_scrolls_with_its_labels() -> None:
    app = sample_app("korean", dim=24)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("query"))
        await pilot.pause()
        heatmap = app.query_one(Heatmap)
        lay = heatmap.layout_info
        assert app.view.grid.cols == 24 and lay.show_values and lay.width > heatmap.size.width
        await pilot.press(*["shift+right"] * 22)
        await pilot.pause()
        before = heatmap.lines_built
        await pilot.press("shift+right")  # a move that scrolls: every line in view again, never more
        await pilot.pause()
        assert 0 < heatmap.lines_built - before <= heatmap.size.height
        assert heatmap.scroll_offset.x > 0
        header = _line(heatmap, 0)
        assert "d23" in header and "d0 " not in header  # the last column's label scrolled in, the first's out
        row = _line(heatmap, lay.header_height)
        assert f"{app.view.grid.value(0, 23):.{lay.digits}f}" in row  # its number, not colour only
        await pilot.press(*["shift+left"] * 23)
        await pilot.pause()
        assert heatmap.scroll_offset.x == 0 and "d0" in _line(heatmap, 0)


@pytest.mark.models
async def test_minilms_first_query_column_is_drawn_and_reachable() -> None:
    app = model_app("minilm", "the cat sat on the mat")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        heatmap = app.query_one(Heatmap)
        assert app.view.name == "query" and app.view.grid.col_labels[0] == "d0"
        assert _line(heatmap, 0).split()[1] == "d0"  # the first column after the corner, not d1
        await pilot.press(*["shift+right"] * 31, *["shift+left"] * 31)
        await pilot.pause()
        assert heatmap.scroll_offset.x == 0 and _line(heatmap, 0).split()[1] == "d0"


def _visible_text(widget) -> str:
    """What the widget shows on screen now: its lines as painted, nothing below its visible height."""
    from textual.geometry import Region

    return "\n".join(strip.text for strip in widget.render_lines(Region(0, 0, *widget.size)))


async def test_a_long_caption_wraps_whole_under_the_stage_bar() -> None:
    app = model_app("transformer-dates", "26년 11월 22일 일요일", layer=1, head=0)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        # five lines of stages, then the caption
        app.explorer.go_to_stage(app.explorer.stage_names().index("enc_attn.weights"))
        await pilot.pause()
        shown = " ".join(_visible_text(app.query_one("#stage-bar")).split())
        assert "7·weights" in shown and "softmax(M)" in shown  # the stages and the formula
        assert "encoder self-attention, before the first decoder step" in shown  # wrapped, not cut
        assert "layer 1, head 0" in shown and "rows sum to 1" in shown  # and the notes after it


async def test_a_long_compare_title_wraps_and_the_three_matrices_stay_side_by_side() -> None:
    from attn_tui.tui.widgets.compare_view import CompareView
    from tests.tui.test_compare import _compare

    app = model_app("seq2seq-dates", "26년 11월 22일 일요일", target="2026-11-22")
    async with app.run_test(size=(110, 36)) as pilot:
        await settle(pilot)
        await _compare(pilot, "model")
        await pilot.press(*["right"] * 20)  # steps on: B − A's title counts the steps that agree
        await pilot.pause()
        view = app.query_one(CompareView)
        titles = list(view.query(".compare-title"))
        assert "same strongest input at" in " ".join(_visible_text(titles[2]).split()) and " steps" in \
            _visible_text(titles[2])  # whole, on a second line
        assert {t.size.height for t in titles} == {2}
        assert len({view.heatmap(side).region.y for side in ("a", "b", "diff")}) == 1  # rows side by side
        await pilot.resize_terminal(160, 36)  # wide enough for one line
        await pilot.pause()
        assert {t.size.height for t in titles} == {1}
        a, b = view.heatmap("a").grid, view.heatmap("b").grid
        assert a.finite_range() == b.finite_range()  # two date models: one scale, as for any comparison
        await pilot.press("s")
        await pilot.pause()
        a, b = view.heatmap("a").grid, view.heatmap("b").grid
        assert a.finite_range() != b.finite_range() and a.finite_range()[1] == float(a.values[:a.filled_rows].max())
