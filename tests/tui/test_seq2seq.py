"""Pilot tests for the seq2seq date model in the app: decoder steps, the alignment, teacher forcing."""

from __future__ import annotations

import pytest
import torch
from textual.widgets import Checkbox, Input

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from tests.models.test_seq2seq import STEP_STAGES
from tests.tui.helpers import model_app, run_from_palette, sample_app, settle

SIZE = (100, 32)
DATE = "22 Nov 2026"
STEPS = STEP_STAGES["additive"]


async def test_stepping_runs_through_each_decoder_steps_stages_then_the_next_step() -> None:
    app = model_app("seq2seq-dates", DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.meta.output == "2026-11-22"
        await pilot.press("home")
        assert app.explorer.places[app.explorer.stage_index][:2] == ("query", 0)
        for name in STEPS[1:]:
            await pilot.press("right")
            assert app.explorer.places[app.explorer.stage_index][:2] == (name, 0)
        await pilot.press("right")  # after step 0's context: step 1's query
        assert app.explorer.places[app.explorer.stage_index][:2] == ("query", 1) and app.view.step == 1
        bar = str(app.query_one("#stage-bar").render())
        assert f"decoder step 1 of {app.trace.steps()}" in bar  # step 1, counted from 0 and "writes '0'" in bar
        assert app.explorer.stage_names() == [*STEPS, "alignment"]  # the bar lists this step's stages
        await pilot.press("8")  # digits jump inside the step
        assert app.explorer.places[app.explorer.stage_index][:2] == ("weights", 1)
        expected = run(ModelAsk("seq2seq-dates", DATE)).trace.tensor("weights", step=1)
        assert torch.allclose(torch.from_numpy(app.view.grid.values).float(), expected)
        await pilot.press("left")
        assert app.explorer.places[app.explorer.stage_index][:2] == ("masked", 1)
        await pilot.press("end")
        assert app.view.name == "alignment" and app.view.grid.rows == app.trace.steps()


async def test_the_inspector_recomputes_decoder_cells() -> None:
    app = model_app("seq2seq-dates", DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for key, words in (("3", "W_a"), ("5", "tanh"), ("6", "v_a"), ("7", "kept"), ("8", "exp"), ("9", "Σ_k")):
            await pilot.press(key, "shift+right")
            text = str(app.query_one("#inspector").render())
            assert words in text and "✓ matches" in text, (key, text)


async def test_g_fills_the_alignment_one_row_per_decoder_step() -> None:
    app = model_app("seq2seq-dates", DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home", "g")
        panel = app.query_one("#alignment", MatrixPanel)
        assert app.explorer.panel == "alignment" and panel.display
        assert panel.grid.filled_rows == 0  # step 0's weights are not computed yet
        await pilot.press(*["right"] * STEPS.index("weights"))
        assert panel.grid.filled_rows == 1
        await pilot.press(*["right"] * len(STEPS))
        assert panel.grid.filled_rows == 2
        expected = run(ModelAsk("seq2seq-dates", DATE)).trace.tensor("alignment")
        assert torch.allclose(torch.from_numpy(panel.grid.values[:2]).float(), expected[:2])
        await pilot.press("end")
        assert panel.grid.filled_rows == app.trace.steps()
        await pilot.press("g")
        assert app.explorer.panel == "heatmap"


async def test_teacher_forcing_needs_a_target_and_decodes_with_it() -> None:
    app = model_app("seq2seq-dates", DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        free = app.trace
        teacher = app.query_one("#set-teacher", Checkbox)
        assert teacher.disabled  # no target typed yet
        app.query_one("#set-target", Input).value = "2026-12-25"
        await pilot.pause()
        await settle(pilot)
        assert not teacher.disabled and not app.trace.meta.teacher_forcing
        teacher.value = True
        await pilot.pause()
        await settle(pilot)
        assert app.trace.meta.teacher_forcing and app.trace.meta.target == "2026-12-25"
        forced = run(ModelAsk("seq2seq-dates", DATE, target="2026-12-25", teacher_forcing=True)).trace
        assert torch.equal(app.trace.tensor("alignment"), forced.tensor("alignment"))
        assert not torch.equal(app.trace.tensor("alignment"), free.tensor("alignment"))
        assert "teacher forcing on 2026-12-25" in str(app.query_one("#tokens").render())
        app.query_one("#set-target", Input).value = ""  # no target: the toggle goes off with it
        await pilot.pause()
        await settle(pilot)
        assert teacher.disabled and not teacher.value and not app.trace.meta.teacher_forcing


async def test_a_bad_date_keeps_the_last_decode() -> None:
    app = model_app("seq2seq-dates", DATE)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.trace
        app.query_one("#sentence", Input).value = "22 Nov 2026 ★"
        await pilot.pause()
        await settle(pilot)
        assert app.trace is before and "✗" in app.error and app.wanted.name == "seq2seq-dates"


async def test_the_dates_sample_loads_from_the_samples_tab() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.editing.load_sample("dates_english")
        await settle(pilot)
        assert app.trace.meta.model == "seq2seq-dates" and app.trace.meta.output == "2026-11-22"
        assert app.query_one("#set-target", Input).value == "2026-11-22"
        app.editing.load_sample("korean")
        await settle(pilot)
        assert not isinstance(app.wanted, ModelAsk) and app.trace.meta.title == "scaled_dot"


@pytest.mark.slow
async def test_the_palette_offers_the_models() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await run_from_palette(pilot, "model: seq2seq-dates-general")
        await settle(pilot)
        assert app.trace.meta.model == "seq2seq-dates-general" and app.trace.meta.attention == "general"
        assert app.explorer.stage_names() == [*STEP_STAGES["general"], "alignment"]


async def test_help_lists_the_model_keys() -> None:
    from textual.widgets import Static

    from attn_tui.tui.screens.help import HelpScreen

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        table = app.screen.query(Static).last().content
        keys = list(table.columns[0].cells)
        assert "{" in keys and "}" in keys and "r" in keys


async def test_teacher_forcing_shows_fed_written_and_target_and_marks_misses_red() -> None:
    from attn_tui.present.model_view import alignment_grid
    from attn_tui.render.heatmap import MISS_LABEL_STYLE, label_segment, layout_for

    app = model_app("seq2seq-dates", "Nov 22, 2026", target="2026-11-23", teacher_forcing=True)
    async with app.run_test(size=(120, 36)) as pilot:
        await settle(pilot)
        meta = app.trace.meta
        assert meta.fed[:3] == ("<s>", "2", "0")  # forced: the target's characters, after <s>
        grid = alignment_grid(app.trace, app.trace.steps())
        assert grid.row_labels[0] == "<s>→2" and grid.row_labels[1] == "2→0"
        missed = {t for t, ch in enumerate(app.trace.query_tokens) if meta.missed(t, ch)}
        assert missed == set(grid.miss_rows) and 9 in missed  # the model writes 2, the target says 3
        lay = layout_for(grid, 100)
        assert label_segment(grid, lay, 9, None).style == MISS_LABEL_STYLE
        assert label_segment(grid, lay, 0, None).style != MISS_LABEL_STYLE
        note = str(app.query_one("#tokens").render())
        assert "target 2026-11-23" in note
        caption = app.query_one("#stage-bar").render()
        assert "fed '<s>'" in str(caption) and "target '2' ✓" in str(caption)
