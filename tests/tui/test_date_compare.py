"""Pilot tests: the GRU and the transformer date models side by side in compare mode, step by step."""

from __future__ import annotations

import torch
from textual.widgets import Checkbox, Input, OptionList, Static

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from attn_tui.tui.screens.choose import ChoiceScreen
from attn_tui.tui.widgets.compare_view import CompareView
from tests.tui.helpers import model_app, settle

SIZE = (130, 40)
DATE = "Sunday, 22 Nov 2026"


async def _compare_models(pilot, b_label: str) -> None:
    """Press c and pick the model comparison whose B is `b_label`; wait until B is drawn."""
    app = pilot.app
    await pilot.press("c")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ChoiceScreen)
    index = next(n for n, (_label, c) in enumerate(screen.options) if c.models and str(c.b_label) == b_label)
    screen.query_one(OptionList).highlighted = index
    await pilot.press("enter")
    await _b_drawn(pilot)


async def _b_drawn(pilot) -> None:
    app = pilot.app
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        shown_b = app.explorer.shown_b
        if app.explorer.pair is not None and shown_b is not None and shown_b.ask == app.comparison.b_ask(app.wanted):
            return
    raise AssertionError("B was never drawn")


def _grid(view: CompareView, side: str) -> torch.Tensor:
    return torch.from_numpy(view.heatmap(side).grid.values).float()


async def test_the_gru_beside_the_transformer_fills_in_step_by_step() -> None:
    app = model_app("seq2seq-dates", DATE)
    gru = run(ModelAsk("seq2seq-dates", DATE)).trace
    transformer = run(ModelAsk("transformer-dates", DATE)).trace
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        await _compare_models(pilot, "transformer-dates")
        view = app.query_one(CompareView)
        assert app.explorer.panel == "compare" and app.explorer.shown_b.trace.meta.arch == "transformer"
        a, b = view.heatmap("a").grid, view.heatmap("b").grid
        assert a.filled_rows == b.filled_rows == 0  # at step 0's query nothing is attended yet
        assert torch.allclose(_grid(view, "a"), gru.tensor("alignment"))
        assert (app.explorer.b_layer, app.explorer.b_head) == (1, 0)  # B opens on its last layer
        assert torch.allclose(_grid(view, "b"), transformer.tensor("alignment", 1, 0, None, "cross_attn"))
        stages = app.explorer.stage_names().index("alignment")  # one step's stages
        for step in range(3):
            await pilot.press(*["right"] * stages)  # on to the next step's query: this step's row is in
            assert view.heatmap("a").grid.filled_rows == view.heatmap("b").grid.filled_rows == step + 1
            assert view.heatmap("diff").grid.filled_rows == step + 1
        note = str(app.query_one("#compare-note", Static).render())
        assert "of 3 steps" in note or "every step so far (3)" in note
        await pilot.press("right_square_bracket", "right_curly_bracket")  # B's head and layer: A has none
        assert (app.explorer.b_layer, app.explorer.b_head) == (0, 1)
        expected = transformer.tensor("alignment", 0, 1, None, "cross_attn")
        assert torch.allclose(_grid(view, "b"), expected)
        assert torch.allclose(_grid(view, "diff"), expected - gru.tensor("alignment"), atol=1e-6)
        assert "L0 H1" in str(view.query_one("#compare-b .compare-title", Static).render())
        await pilot.press("down", "shift+right")
        assert {view.heatmap(side).cursor for side in ("a", "b", "diff")} == {(1, 1)}
        inspector = str(app.query_one("#inspector").render())
        assert "A: seq2seq-dates: Bahdanau attention" in inspector and "B − A =" in inspector
        assert "B: transformer-dates: cross-attention, layer 0, head 1" in inspector
        await pilot.press("end")
        assert view.heatmap("a").grid.filled_rows == gru.steps() == view.heatmap("b").grid.filled_rows
        await pilot.press("c")
        assert app.explorer.panel == "heatmap" and app.comparison is None and app.explorer.pair is None


async def test_the_transformers_mean_beside_the_gru_with_teacher_forcing_on_both() -> None:
    app = model_app("transformer-dates", DATE, target="2026-12-25", teacher_forcing=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _compare_models(pilot, "seq2seq-dates")  # the transformer's chosen head
        assert app.comparison.models and not app.comparison.mean_heads
        await pilot.press("c", "c")  # leave, and choose again: the transformer's mean of the heads
        await pilot.pause()
        screen = app.screen
        index = next(n for n, (_l, c) in enumerate(screen.options) if c.models and c.mean_heads
                     and str(c.b_label) == "seq2seq-dates")
        screen.query_one(OptionList).highlighted = index
        await pilot.press("enter")
        await _b_drawn(pilot)
        view = app.query_one(CompareView)
        b_trace = app.explorer.shown_b.trace
        assert app.trace.meta.teacher_forcing and b_trace.meta.teacher_forcing
        assert app.trace.meta.fed == b_trace.meta.fed == ("<s>", *"2026-12-25")  # both fed the target's characters
        forced = run(ModelAsk("transformer-dates", DATE, target="2026-12-25", teacher_forcing=True)).trace
        await pilot.press("end")
        layer = app.explorer.layer_index
        assert torch.allclose(_grid(view, "a"), forced.tensor("alignment_mean", layer, None, None, "cross_attn"))
        assert "mean of heads" in str(view.query_one("#compare-a .compare-title", Static).render())
        app.query_one("#set-teacher", Checkbox).value = False  # A changes: B follows
        await pilot.pause()
        await settle(pilot)
        await _b_drawn(pilot)
        assert not app.trace.meta.teacher_forcing and not app.explorer.shown_b.trace.meta.teacher_forcing
        free = run(ModelAsk("seq2seq-dates", DATE, target="2026-12-25")).trace
        assert torch.allclose(_grid(view, "b"), free.tensor("alignment"))
        app.query_one("#set-target", Input).value = ""  # no target: teacher forcing is gone, the models stay
        await pilot.pause()
        await settle(pilot)
        await _b_drawn(pilot)
        assert app.explorer.panel == "compare"


async def test_choosing_another_source_while_comparing_models_leaves_compare_mode() -> None:
    app = model_app("seq2seq-dates", DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _compare_models(pilot, "transformer-dates")
        app.editing.choose_model(None)  # back to the attention variants
        await settle(pilot)
        await pilot.pause()
        assert app.comparison is None and app.explorer.panel != "compare"
