"""Pilot tests for the transformer date model in the app: encoder stages, decoder steps, layers and heads."""

from __future__ import annotations

import torch
from textual.widgets import Checkbox, Input, Label

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from tests.tui.helpers import model_app, settle

SIZE = (100, 32)
NAME = "transformer-dates"
DATE = "22 Nov 2026"
STAGES = ("query", "key", "value", "scores", "scaled", "masked", "weights", "output")


def _at(app) -> tuple:
    place = app.explorer.places[app.explorer.stage_index]
    return place.name, place.step, place.module


def _shown(app) -> torch.Tensor:
    return torch.from_numpy(app.view.grid.values).float()


async def test_stepping_runs_through_the_encoder_then_each_steps_self_and_cross_attention() -> None:
    app = model_app(NAME, DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.meta.output == "2026-11-22" and app.trace.layers == 2 and app.trace.heads == 4
        await pilot.press("home")
        assert _at(app) == ("query", None, "enc_attn")
        for name in STAGES[1:]:
            await pilot.press("right")
            assert _at(app) == (name, None, "enc_attn")
        bar = str(app.query_one("#stage-bar").render())
        assert "encoder self-attention" in bar and "layer 0, head 0" in bar
        for module in ("self_attn", "cross_attn"):
            for name in STAGES:
                await pilot.press("right")
                assert _at(app) == (name, 0, module)
        await pilot.press("right")
        assert _at(app) == ("query", 1, "self_attn")
        names = app.explorer.stage_names()
        assert names[:8] == [f"enc_attn.{s}" for s in STAGES] and names[8:24] == [
            f"{m}.{s}" for m in ("self_attn", "cross_attn") for s in STAGES]
        assert names[24:] == ["cross_attn.alignment", "cross_attn.alignment_mean"]
        await pilot.press("end")
        assert app.view.name == "alignment_mean" and app.view.grid.rows == app.trace.steps()


async def test_layer_and_head_keys_move_through_every_head_of_the_step() -> None:
    app = model_app(NAME, DATE)
    reference = run(ModelAsk(NAME, DATE)).trace
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("cross_attn.weights"))
        await pilot.pause()
        assert _at(app) == ("weights", 0, "cross_attn")
        await pilot.press("right_square_bracket", "right_square_bracket", "right_curly_bracket")
        assert (app.explorer.layer_index, app.explorer.head) == (1, 2)
        assert (app.view.place.layer, app.view.place.head) == (1, 2)
        assert torch.allclose(_shown(app), reference.tensor("weights", 1, 2, 0, "cross_attn"))
        assert "1 of 2" in str(app.query_one("#layer-view", Label).render())
        assert "2 of 4" in str(app.query_one("#head-view", Label).render())
        bar = str(app.query_one("#stage-bar").render())
        assert "decoder step 0 of 11" in bar and "layer 1, head 2" in bar
        # the encoder keeps the layer and head
        app.explorer.go_to_stage(app.explorer.stage_names().index("enc_attn.weights"))
        await pilot.pause()
        assert torch.allclose(_shown(app), reference.tensor("weights", 1, 2, None, "enc_attn"))
        await pilot.press("left_curly_bracket", "left_square_bracket")
        assert torch.allclose(_shown(app), reference.tensor("weights", 0, 1, None, "enc_attn"))


async def test_g_fills_the_cross_attention_alignment_of_the_chosen_head() -> None:
    app = model_app(NAME, DATE)
    reference = run(ModelAsk(NAME, DATE)).trace
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home", "g")
        panel = app.query_one("#alignment", MatrixPanel)
        assert app.explorer.panel == "alignment" and panel.grid.filled_rows == 0
        await pilot.press(*["right"] * (8 + STAGES.index("weights")))  # step 0's self-attention weights
        assert _at(app) == ("weights", 0, "self_attn") and panel.grid.filled_rows == 0
        await pilot.press(*["right"] * 8)  # step 0's cross-attention weights
        assert _at(app) == ("weights", 0, "cross_attn") and panel.grid.filled_rows == 1
        await pilot.press("right_curly_bracket", "right_square_bracket")
        expected = reference.tensor("alignment", 1, 1, None, "cross_attn")
        assert torch.allclose(torch.from_numpy(panel.grid.values).float(), expected)
        assert "layer 1, head 1" in str(panel.query_one(".panel-title").render()) and panel.grid.filled_rows == 1
        await pilot.press("end")
        assert panel.grid.filled_rows == app.trace.steps()
        expected = reference.tensor("alignment_mean", 1, None, None, "cross_attn")
        assert torch.allclose(torch.from_numpy(panel.grid.values).float(), expected)


async def test_teacher_forcing_works_for_the_transformer() -> None:
    app = model_app(NAME, DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-target", Input).value = "2026-12-25"
        await pilot.pause()
        await settle(pilot)
        app.query_one("#set-teacher", Checkbox).value = True
        await pilot.pause()
        await settle(pilot)
        assert app.trace.meta.teacher_forcing and app.trace.meta.target == "2026-12-25"
        forced = run(ModelAsk(NAME, DATE, target="2026-12-25", teacher_forcing=True)).trace
        key = ("alignment", 1, 3, None, "cross_attn")
        assert torch.equal(app.trace.tensor(*key), forced.tensor(*key))
        assert app.trace.stage("key", 0, 0, 8, "self_attn").axes[0].labels[-3:] == ("1", "2", "-")
