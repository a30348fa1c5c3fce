"""Pilot tests for a real transformer in the app: model choice, layer and head keys, grid, rollout, errors."""

from __future__ import annotations

import io

import pytest
import torch
from rich.console import Console
from textual.widgets import Input, Label, Select, Static

from attn_tui.ask.settings import ModelAsk
from attn_tui.present.model_view import summary_of
from attn_tui.trace.meta import TransformerRun

pytest.importorskip("transformers")  # the models extra (attn-tui[models]) carries MiniLM

from attn_tui.attention.summary import head_stats, rollout
from attn_tui.sources import run
from attn_tui.sources.transformer import model_run
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.widgets.heatmap import Heatmap
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid
from tests.tui.helpers import model_app, sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]


def own_attentions(text: str) -> torch.Tensor:
    """The model's own output_attentions, every layer and head: (layers, heads, N, N)."""
    return torch.stack([a.float() for a in model_run("minilm", text).attentions])

SIZE = (100, 32)
TEXT = "the cat sat"


async def test_the_app_opens_on_minilm_with_the_models_own_tokens() -> None:
    app = model_app("minilm", TEXT, layer=2, head=5)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert isinstance(app.trace.meta, TransformerRun)
        assert app.trace.query_tokens == ("[CLS]", "the", "cat", "sat", "[SEP]")
        assert app.view.name == "query"  # the first stage of the head's pipeline
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.pause()  # read off the event loop, drawn when it arrives
        expected = model_run("minilm", TEXT).attentions[2][5]  # the model's own output_attentions
        assert torch.allclose(torch.from_numpy(app.view.grid.values).float(), expected.float(), atol=1e-6)
        assert app.view.grid.special_rows == frozenset({0, 4}) == app.view.grid.special_cols
        assert "2 of 6" in str(app.query_one("#layer-view").render())
        assert "5 of 12" in str(app.query_one("#head-view").render())
        assert "[CLS]" in str(app.query_one("#tokens").render())
        assert "layer 2 head 5" in str(app.query_one("#stage-bar").render())


async def test_brackets_change_the_head_and_braces_the_layer() -> None:
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (0, 1)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert app.explorer.head == 11  # wraps around
        await pilot.press("right_curly_bracket")
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (1, 11)
        await pilot.press("left_curly_bracket", "left_curly_bracket")
        await settle(pilot)
        assert app.explorer.layer_index == 5
        assert app.view.name == "weights"  # the stage stays put while the head changes
        same = run(ModelAsk("minilm", TEXT, layer=5, head=11)).trace
        assert torch.equal(app.trace.tensor("scores", 5, 11), same.tensor("scores", 5, 11))
        # The heatmap is our own arithmetic on the model's tensors; the model's fused kernels may round the
        # last bit differently on another CPU, so equal to within float32 rounding.
        shown = torch.from_numpy(app.view.grid.values).float()
        assert (shown - own_attentions(TEXT)[5, 11]).abs().max() <= 1e-6


async def test_braces_without_a_transformer_say_why() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right_curly_bracket")
        assert any("layers" in n.message for n in app.notices)


async def test_stepping_and_the_inspector_work_on_a_real_head() -> None:
    app = model_app("minilm", TEXT, layer=1, head=3)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        assert app.view.name == "query"
        await pilot.press("down", "shift+right")
        text = str(app.query_one("#inspector").render())
        assert "b_q" in text and "✓ matches" in text
        await pilot.press("5")
        assert app.view.name == "scaled" and "✓ matches" in str(app.query_one("#inspector").render())


async def test_g_shows_every_layer_and_head_with_its_statistics() -> None:
    app = model_app("minilm", TEXT, layer=3, head=7)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        assert app.explorer.panel == "model_grid" and app.query_one(ModelGrid).display
        assert not app.query_one("#left").display  # the whole width for the grid
        assert app.query_one(ModelGrid).current == (3, 7)
        run = model_run("minilm", TEXT)
        stats = head_stats(own_attentions(TEXT), run.mask.any(dim=0))
        cell = summary_of(app.shown).cell(3, 7)
        assert cell.entropy == pytest.approx(stats[3 * 12 + 7].entropy)
        assert cell.first_share == pytest.approx(stats[3 * 12 + 7].first_token_share)
        console = Console(width=200, record=True, file=io.StringIO())
        console.print(app.query_one("#model-grid-body").content)
        body = console.export_text()
        assert f"{cell.entropy:.3f}" in body and "h11" in body and "L5" in body
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.query_one(ModelGrid).current == (3, 8)  # the highlight follows the head
        await pilot.press("g")
        assert app.explorer.panel == "heatmap" and app.query_one(Heatmap).display and app.query_one("#left").display


async def test_r_shows_the_attention_rollout() -> None:
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        assert app.explorer.panel == "rollout"
        panel = app.query_one("#rollout", MatrixPanel)
        assert panel.display
        run = model_run("minilm", TEXT)
        expected = rollout(own_attentions(TEXT), run.mask.any(dim=0))
        assert torch.allclose(torch.from_numpy(panel.grid.values).float(), expected, atol=1e-6)
        await pilot.press("r", "r")  # the value-weighted rollout, then back
        assert app.explorer.panel == "heatmap"


async def test_r_again_shows_the_value_weighted_rollout_and_says_which() -> None:
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        stats = app.shown.stats
        assert stats is not None and stats.rollout_moved is not None
        panel = app.query_one("#rollout", MatrixPanel)
        await pilot.press("r")
        await pilot.pause()
        assert "attention rollout" in str(panel.query_one(".panel-title", Static).render())
        await pilot.press("r")
        await pilot.pause()
        assert app.explorer.panel == "rollout" and app.explorer.value_weighted
        assert "value-weighted rollout" in str(panel.query_one(".panel-title", Static).render())
        values = torch.from_numpy(panel.grid.values).float()
        assert torch.allclose(values, stats.rollout_moved, atol=1e-6)
        assert not torch.allclose(values, stats.rollout, atol=1e-3)  # not the plain rollout drawn again
        await pilot.press("t")  # Korean: the title says which rollout in the other language too
        await pilot.pause()
        assert "값 가중 롤아웃" in str(panel.query_one(".panel-title", Static).render())
        await pilot.press("t", "r")
        assert app.explorer.panel == "heatmap" and not app.explorer.value_weighted
        await pilot.press("r")  # the rollout opens plain again
        assert app.explorer.panel == "rollout" and not app.explorer.value_weighted


async def test_r_without_a_transformer_says_why() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("r")
        assert app.explorer.panel == "heatmap" and any("rollout" in n.message for n in app.notices)


async def test_the_model_select_switches_to_minilm_and_back() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-model", Select).value = "minilm"
        await pilot.pause()
        assert app.query_one(Heatmap).loading or "minilm" in app.state.loaded_models  # the indicator while loading
        await settle(pilot)
        assert isinstance(app.trace.meta, TransformerRun) and not app.query_one(Heatmap).loading
        assert app.trace.query_tokens[0] == "[CLS]"
        assert not app.query_one("#set-variant").parent.display  # variant rows hidden for a model
        app.query_one("#set-model", Select).value = "variants"
        await pilot.pause()
        await settle(pilot)
        assert app.trace.meta.title == "scaled_dot" and not isinstance(app.wanted, ModelAsk)


async def test_a_missing_model_shows_the_error_and_keeps_the_last_model() -> None:
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.trace
        app.query_one("#set-model", Select).value = "other"
        await pilot.pause()
        assert app.focused is app.query_one("#set-model-path", Input)
        await pilot.press(*"./no-such-model", "enter")
        await settle(pilot)
        assert "no model './no-such-model'" in app.error and "last valid result" in app.error
        assert app.trace is before and app.wanted.name == "minilm"
        assert app.query_one("#set-model", Select).value == "minilm"
        assert any(n.severity == "error" for n in app.notices)


async def test_loading_shows_an_indicator_until_the_model_is_ready() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.editing.choose_model("seq2seq-dates-general")
        assert app.query_one(Heatmap).loading  # set before the worker starts
        assert "loading seq2seq-dates-general" in str(app.query_one("#model-status").render())
        await settle(pilot)
        assert not app.query_one(Heatmap).loading and "✓" in str(app.query_one("#model-status").render())


async def test_a_sentence_typed_in_model_mode_is_tokenized_by_the_model() -> None:
    app = model_app("minilm", TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#sentence", Input).value = "dogs bark"
        await pilot.pause()
        await settle(pilot)
        assert app.trace.query_tokens == ("[CLS]", "dogs", "bark", "[SEP]")


def test_the_new_keys_are_bindings_with_ids() -> None:
    ids = {b.id for b in APP_BINDINGS}
    assert {"layer.next", "layer.prev", "view.rollout", "view.grid"} <= ids


def test_the_command_line_opens_the_app_on_a_model(monkeypatch) -> None:
    from attn_tui import cli

    seen = {}
    monkeypatch.setattr("attn_tui.tui.app.run_app",
                        lambda request, model, max_memory=None, **_options: seen.update(model=model) or 0)
    assert cli.main(["--model", "minilm", "--text", TEXT, "--layer", "2", "--head", "4"]) == 0
    assert (seen["model"].name, seen["model"].layer, seen["model"].head) == ("minilm", 2, 4)
    cli.main(["--sample", "dates_korean"])
    assert seen["model"].name == "seq2seq-dates" and seen["model"].text.startswith("26년")
    cli.main(["--sample", "korean"])
    assert seen["model"] is None


def test_the_command_line_opens_the_app_on_the_induction_probe(monkeypatch, capsys) -> None:
    from attn_tui import cli

    seen = {}
    monkeypatch.setattr("attn_tui.tui.app.run_app",
                        lambda request, model, max_memory=None, **_options: seen.update(model=model) or 0)
    assert cli.main(["--model", "minilm", "--probe", "induction", "--probe-length", "12", "--probe-seed", "5"]) == 0
    model = seen["model"]
    assert (model.name, model.probed) == ("minilm", ("induction", 12, 5))
    with pytest.raises(SystemExit) as stopped:  # one of the two, said in one line
        cli.main(["--model", "minilm", "--probe", "induction", "--text", TEXT])
    assert stopped.value.code == 2
    assert "--probe replaces --text" in capsys.readouterr().err


async def test_the_app_opened_on_the_probe_says_so_in_the_model_pane() -> None:
    app = model_app("minilm", "", probe="induction", probe_length=6, probe_seed=1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.shown is not None and app.shown.trace.meta.probe == "induction"
        assert len(app.trace.query_tokens) == 1 + 2 * 6  # [CLS], then six tokens said twice
        assert app.trace.query_tokens[1:7] == app.trace.query_tokens[7:]
        status = str(app.query_one("#model-status", Label).render())
        assert "induction probe: 6 random tokens said twice (seed 1)" in status
        app.query_one("#sentence", Input).value = "dogs bark"  # a sentence typed takes the probe's place
        await pilot.pause()
        await settle(pilot)
        assert app.trace.query_tokens == ("[CLS]", "dogs", "bark", "[SEP]") and not app.shown.trace.meta.probe
        assert "induction probe" not in str(app.query_one("#model-status", Label).render())
