"""A decode on show while it is being made: step 0 appears before step 1 exists, then the rest, with the place
kept; a stale ask's steps are dropped and its decode stops."""

from __future__ import annotations

import threading

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.stage_bar import StageBar
from tests.limits import limit
from tests.tui.helpers import RecordingApp, model_app, settle, until

SIZE = (100, 32)
DATE = "22 Nov 2026"


class Held:
    """`sources.run` with its decode held after step 0 until the test lets it go on."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import attn_tui.sources as door

        self.run = door.run
        self.reached, self.release = threading.Event(), threading.Event()
        self.published: dict[str, int] = {}  # steps each text's decode handed up
        monkeypatch.setattr(door, "run", self)

    def __call__(self, ask, *args, on_step=None, **kwargs):
        def step(shown) -> None:
            on_step(shown)  # raises once a newer ask cancelled the worker
            self.published[ask.text] = shown.trace.steps()
            if shown.trace.steps() == 1 and ask.text == DATE:
                self.reached.set()
                self.release.wait(timeout=limit(30))

        return self.run(ask, *args, on_step=None if on_step is None else step, **kwargs)



async def test_step_0_is_on_show_while_step_1_is_being_made_then_the_rest_with_the_place_kept(monkeypatch) -> None:
    from attn_tui.sources import run

    held = Held(monkeypatch)
    app = model_app("seq2seq-dates", DATE)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.explorer.trace is not None and app.explorer.trace.steps() == 1)
            assert held.reached.is_set() and not held.release.is_set()  # the worker waits inside step 1's turn
            assert app.shown is None and app.trace is app.explorer.trace and app.trace.version == 1  # a snapshot
            assert {p.step for p in app.explorer.places} == {0}  # only step 0 exists; no alignment yet
            whole = run(ModelAsk("seq2seq-dates", DATE)).trace
            await pilot.press("8")  # the user goes to step 0's weights while the decode is held
            assert app.view.place.key == "weights@t0"
            assert torch.allclose(torch.from_numpy(app.view.grid.values).float(), whole.tensor("weights", step=0))
            bar = str(app.query_one(StageBar).render())
            assert "decoder step 0 of 1" in bar
            assert "decoding… 1 step so far" in str(app.query_one("#model-status").render())
            await pilot.press("t")  # the steps' labels in Korean
            await pilot.pause()
            assert "디코더 스텝 0" in str(app.query_one(StageBar).render())
            assert str(app.explorer.trace.step_axis.label(0)) == "디코더 스텝 0: '2'"
            await pilot.press("t", "g")  # the alignment so far: step 0's row only
            alignment = app.query_one("#alignment", MatrixPanel)
            assert app.explorer.panel == "alignment" and alignment.grid.rows == 1
            await pilot.press("g")
            held.release.set()
            await settle(pilot)
            assert app.shown is not None and app.trace.steps() == whole.steps() == held.published[DATE]
            assert app.view.place.key == "weights@t0"  # the place the user was at is kept
            steps = {p.step for p in app.explorer.places}
            assert steps == {*range(whole.steps()), None}  # the selector reaches every step and the alignment
            await pilot.press("end")
            await until(pilot, lambda: app.view.name == "alignment")  # its frame, read off the loop, drawn
            assert app.view.grid.rows == whole.steps()
    finally:
        held.release.set()


async def test_a_stale_asks_steps_are_dropped_and_its_decode_stops(monkeypatch) -> None:
    held = Held(monkeypatch)
    app = model_app("seq2seq-dates", DATE)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, held.reached.is_set)
            await pilot.pause()
            first = next(w for w in app.workers if w.group == "compute")
            app.ask(ModelAsk("seq2seq-dates", "3 Mar 1999"))  # a newer ask while the first is held at step 1
            assert first.is_cancelled
            held.release.set()
            await until(pilot, lambda: first.is_finished and first not in app.workers)
            await settle(pilot)
            assert app.trace.meta.input == "3 Mar 1999" and app.trace.meta.output == "1999-03-03"
            assert app.explorer.trace is app.trace
            assert held.published[DATE] == 1  # cancelled: the first decode made no step after it was let go
    finally:
        held.release.set()


async def test_a_stage_asked_for_that_comes_with_the_last_step_is_where_the_whole_decode_opens(monkeypatch) -> None:
    held = Held(monkeypatch)
    app = RecordingApp(model=ModelAsk("seq2seq-dates", DATE), first_stage="alignment")
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.explorer.trace is not None and app.explorer.trace.steps() == 1)
            assert app.explorer.places[app.explorer.stage_index].step == 0  # no alignment yet: step 0 meanwhile
            held.release.set()
            await settle(pilot)
            assert app.view.name == "alignment" and app.view.grid.rows == app.trace.steps()
    finally:
        held.release.set()

async def test_a_transformer_decode_opens_at_its_asked_layer_and_head_and_keeps_the_head_chosen_meanwhile(
        monkeypatch) -> None:
    held = Held(monkeypatch)
    app = model_app("transformer-dates", DATE, layer=1, head=2)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await until(pilot, lambda: app.explorer.trace is not None and app.explorer.trace.steps() == 1)
            assert (app.explorer.layer_index, app.explorer.head) == (1, 2)  # the model's own first place at once
            await pilot.press("]")  # the next head while step 1 is being made
            assert app.explorer.head == 3
            held.release.set()
            await settle(pilot)
            assert app.trace.steps() > 1 and (app.explorer.layer_index, app.explorer.head) == (1, 3)
            assert app.view.head == 3
    finally:
        held.release.set()

def test_snapshot_of_step_0_on_show_while_the_decode_goes_on(snap_compare, monkeypatch) -> None:
    """The screen while a decode is held after its first step: step 0's weights, the bar's one step, the status."""
    held = Held(monkeypatch)

    class LettingGo(RecordingApp):
        def on_unmount(self) -> None:  # the picture is taken: the held decode may finish
            held.release.set()

    app = LettingGo(model=ModelAsk("seq2seq-dates", DATE))

    async def run_before(pilot) -> None:
        await until(pilot, lambda: app.explorer.trace is not None and app.explorer.trace.steps() == 1)
        await pilot.press("8")
        await pilot.pause()

    try:
        assert snap_compare(app, terminal_size=(100, 32), run_before=run_before)
    finally:
        held.release.set()
