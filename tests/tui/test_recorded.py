"""The app opened on a recorded trace (`attn-tui trace`): stages, steps and heads of the user's code, and its lines."""

from __future__ import annotations

import torch

import attn_tui
from attn_tui.ask.settings import RecordAsk
from attn_tui.tui.widgets.inspector import Inspector
from attn_tui.tui.widgets.stage_bar import StageBar
from tests.sources.recorder import modules as m
from tests.tui.helpers import RecordingApp, settle

SIZE = (120, 40)


def recorded_multihead():
    torch.manual_seed(0)
    module = m.MultiHeadAttention(8, 2)
    with attn_tui.record(tokens=["나는", "학교에", "간다"]) as rec:
        module(torch.randn(2, 3, 8), torch.tril(torch.ones(3, 3)).expand(2, 3, 3))
    return rec.trace


def text_of(widget) -> str:
    return str(widget.render())


async def test_the_app_shows_a_recorded_trace_with_its_lines() -> None:
    trace = recorded_multihead()
    app = RecordingApp(record=RecordAsk().keeping(trace))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace is trace and app.view.name == "weights"
        bar = text_of(app.query_one(StageBar))
        assert "made by modules.py:" in bar and "F.softmax(scores, dim=-1)" in bar
        assert "step 0" in bar and "head 0 of 2" in bar
        assert "made by modules.py:" in text_of(app.query_one(Inspector))
        assert "✓ matches" in text_of(app.query_one(Inspector))
        await pilot.press("]")
        assert app.view.head == 1 and "head 1 of 2" in text_of(app.query_one(StageBar))
        await pilot.press("end")
        assert app.view.name == "projected" and app.view.step == 1
        await pilot.press("home")
        assert app.view.name == "input" and app.view.step == 0


async def test_walking_every_place_of_two_modules_never_fails() -> None:
    torch.manual_seed(1)
    encoder, decoder = m.MultiHeadAttention(4, 2), m.BahdanauAttention(4)
    with attn_tui.record() as rec:
        keys, _ = encoder(torch.randn(1, 3, 4))
        for _ in range(2):
            decoder(torch.randn(1, 1, 4), keys)
    app = RecordingApp(record=RecordAsk().keeping(rec.trace))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        seen = set()
        for _ in range(len(app.explorer.places)):
            seen.add((app.view.place.module, app.view.name))
            await pilot.press("]", "right")
        assert ("BahdanauAttention", "energy") in seen and ("MultiHeadAttention", "concat") in seen


async def test_an_edit_sets_the_recorded_trace_aside_and_undo_brings_it_back() -> None:
    trace = recorded_multihead()
    app = RecordingApp(record=RecordAsk().keeping(trace))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-mask").value = "causal"  # a variant's setting: the variants are computed instead
        await pilot.pause()
        await settle(pilot)
        assert app.trace is not trace and app.shown.ask.kind == "variants"
        assert app.trace.meta.settings_of_variants.mask == "causal"
        assert any("set aside" in str(n.message) for n in app._notifications)
        await pilot.press("u")
        await settle(pilot)
        assert app.trace is trace and app.view.name == "weights"  # shown as it was, not recomputed
        await pilot.press("u")  # nothing came before it
        await settle(pilot)
        assert app.trace is trace and any("nothing to undo" in str(n.message) for n in app._notifications)


async def test_the_first_screen_of_recorded_code_comes_through_the_worker_and_the_door(monkeypatch) -> None:
    """The app is given the RecordAsk, not a trace: its worker asks the one door, which hands back the very trace."""
    from attn_tui.sources import door

    asked = []
    real = door.run

    def counted(ask, *args, **kwargs):
        asked.append(ask)
        return real(ask, *args, **kwargs)

    monkeypatch.setattr(door, "run", counted)
    trace = recorded_multihead()
    record = RecordAsk("modules.py").keeping(trace)
    app = RecordingApp(record=record)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert asked[-1] is record and app.wanted is record and app.shown.ask is record and app.trace is trace
        assert app.view.name == "weights" and app.query_one("#set-model").value == "recorded"


async def test_a_traced_decoder_s_steps_stack_into_its_alignment() -> None:
    """Note 004's decoder calls its attention once a step over the same encoder outputs: g shows steps × source,
    a row filling in as each step's weights are reached, as the date model's alignment does."""
    from attn_tui.present.model_view import aligned
    from attn_tui.tui.widgets.matrix_panel import MatrixPanel

    torch.manual_seed(3)
    attention, keys = m.BahdanauAttention(4), torch.randn(1, 5, 4)  # five encoder outputs
    with attn_tui.record(tokens=["<sos>"], key_tokens=["h1", "h2", "h3", "h4", "h5"]) as rec:
        for _ in range(3):
            attention(torch.randn(1, 1, 4), keys)
    trace = rec.trace
    assert aligned(trace) and trace.steps() == 3
    app = RecordingApp(record=RecordAsk().keeping(trace))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home", "g")
        panel = app.query_one("#alignment", MatrixPanel)
        assert app.explorer.panel == "alignment" and panel.grid.filled_rows == 0
        assert (panel.grid.rows, panel.grid.cols) == (3, 5) and panel.grid.col_labels == ("h1", "h2", "h3", "h4", "h5")
        await pilot.press("end")
        await settle(pilot)
        assert panel.grid.filled_rows == 3
        for t in range(3):
            torch.testing.assert_close(torch.from_numpy(panel.grid.values[t]).float(),
                                       trace.tensor("weights", step=t)[0].float())
        assert "3 of 3 recorded steps" in text_of(panel.query_one(".panel-title"))
