"""Compare mode: A, B (one setting changed) and B − A, one cursor and one inspector for all three."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from textual.widgets import OptionList

from attn_tui.attention.engine import compute
from attn_tui.present.compare import comparisons
from attn_tui.tui.screens.choose import ChoiceScreen
from attn_tui.tui.widgets.compare_view import CompareView
from tests.tui.helpers import sample_app, settle

SIZE = (130, 40)


async def _compare(pilot, key: str) -> None:
    """Press c and pick the comparison whose key is `key`."""
    app = pilot.app
    await pilot.press("c")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ChoiceScreen)
    index = next(n for n, (_label, c) in enumerate(screen.options) if c.key == key)
    screen.query_one(OptionList).highlighted = index
    await pilot.press("enter")
    await settle(pilot)
    for _ in range(50):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.explorer.panel == "compare" and app.query_one(CompareView).heatmap("b").grid is not None:
            return


async def test_fill_minus_inf_against_minus_1e9_on_a_row_with_nothing_to_attend() -> None:
    app = sample_app("lookup", mask="padding", pad_keys=4)  # every key is padding: rows with nothing to attend
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(6)")  # weights
        await _compare(pilot, "fill")
        view = app.query_one(CompareView)
        a, b, diff = (view.heatmap(side).grid for side in ("a", "b", "diff"))
        assert a.value(0, 0) == 0.0 and b.value(0, 0) == 0.25  # −∞: zeros (as SDPA); −1e9: uniform
        assert diff.value(0, 0) == 0.25
        expected = compute(app.comparison.b_ask(app.wanted)).tensor("weights")
        assert torch.allclose(torch.tensor(b.values), expected.double())
        await pilot.press("down", "shift+right")
        assert {view.heatmap(side).cursor for side in ("a", "b", "diff")} == {(1, 1)}  # one cursor
        inspector = str(app.query_one("#inspector").render())
        assert "A: fill -inf" in inspector and "B: fill -1e9" in inspector and "B − A = 0.25" in inspector
        await pilot.press("c")
        assert app.explorer.panel == "heatmap" and app.comparison is None


async def test_scaled_against_unscaled_says_b_has_no_scaled_stage() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(5)")  # scaled
        await _compare(pilot, "scale")
        view = app.query_one(CompareView)
        assert app.trace.meta.variant == "scaled_dot" and view.heatmap("b").grid is None
        assert "no stage scaled" in view.heatmap("b").message
        await pilot.press("right", "right")  # weights exist in both
        assert view.heatmap("b").grid is not None and view.heatmap("diff").grid is not None


async def test_head_against_head_reads_the_same_trace() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(10)")  # weights, per head
        await _compare(pilot, "head")
        view = app.query_one(CompareView)
        b = view.heatmap("b").grid
        head = app.comparison.head
        assert app.explorer.shown_b is None and head != app.explorer.head
        assert torch.allclose(torch.tensor(b.values), app.trace.tensor("weights", head=head).double())


async def test_the_choices_fit_the_ask() -> None:
    from attn_tui.ask.samples import load_samples

    lookup = load_samples()["lookup"].request
    keys = {c.key for c in comparisons(lookup, 1, 0)}
    assert {"scale", "mask"} <= keys and "fill" not in keys and "projection" not in keys  # no mask, typed Q/K/V
    dates = load_samples()["dates_english"].model
    assert {c.key for c in comparisons(dates, 1, 0)} == {"teacher", "model"}  # model: another date model as B


async def test_a_and_b_share_one_colour_scale_and_s_gives_each_panel_its_own() -> None:
    from attn_tui.render.heatmap import grid_scale

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(4)")  # scores: signed, and positions change their range
        await _compare(pilot, "positional")
        view = app.query_one(CompareView)
        a_own = app.view.grid.values  # A's scores as the stage holds them
        b_own = compute(app.comparison.b_ask(app.wanted)).tensor("scores").double().numpy()
        both = (min(a_own.min(), b_own.min()), max(a_own.max(), b_own.max()))
        a, b, diff = (view.heatmap(side).grid for side in ("a", "b", "diff"))
        assert a.finite_range() == b.finite_range() == pytest.approx(both)
        assert grid_scale(a) == grid_scale(b)  # one colour is one value in A and in B
        bound = float(abs(b_own - a_own).max())
        assert grid_scale(diff).lo == pytest.approx(-bound) and grid_scale(diff).hi == pytest.approx(bound)
        assert "share one colour scale" in str(view.query_one("#compare-scale").render())
        await pilot.press("s")
        await pilot.pause()
        a, b, diff_own = (view.heatmap(side).grid for side in ("a", "b", "diff"))
        assert a.finite_range() == pytest.approx((a_own.min(), a_own.max()))
        assert b.finite_range() == pytest.approx((b_own.min(), b_own.max()))
        assert grid_scale(a) != grid_scale(b) and grid_scale(diff_own) == grid_scale(diff)
        assert np.array_equal(a.values, a_own)  # the numbers stay; only the colours change
        assert "each on its own colour scale" in str(view.query_one("#compare-scale").render())
        assert not app.notices  # s applies here: nothing to explain
        await pilot.press("s")
        await pilot.pause()
        assert grid_scale(view.heatmap("a").grid) == grid_scale(view.heatmap("b").grid)


async def test_compare_panes_narrower_than_the_stage_show_numbers_and_scroll_together() -> None:
    app = sample_app("korean", dim=24)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(1)")  # query: 24 columns in a third of the screen
        await _compare(pilot, "positional")
        view = app.query_one(CompareView)
        a = view.heatmap("a")
        assert a.layout_info.show_values and a.layout_info.width > a.size.width
        await pilot.press(*["shift+right"] * 23)
        await pilot.pause()
        for side in ("a", "b", "diff"):
            heatmap = view.heatmap(side)
            lay = heatmap.layout_info
            assert heatmap.scroll_offset.x > 0 and "d23" in heatmap.render_line(0).text
            value = heatmap.grid.value(0, 23)
            assert f"{value:.{lay.digits}f}" in heatmap.render_line(lay.header_height).text
