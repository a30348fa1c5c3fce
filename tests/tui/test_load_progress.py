"""A long load shows a progress bar and what it is doing, under the model's status, and it goes with the result.

The load is a real tiny model folder (tests/sources/tiny_models.py) held at one of its phases by a listener that
waits on an Event, so what the test (and the snapshot) sees is that phase, every time.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import ProgressBar

from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import ModelAsk
from attn_tui.i18n import Msg
from attn_tui.sources.progress import Progress
from attn_tui.trace.meta import TransformerRun
from attn_tui.tui.load_phase import PhaseClock, seconds
from attn_tui.tui.messages import LoadProgressed
from attn_tui.tui.widgets.stage_bar import StageBar
from attn_tui.tui.workers import Throttle, post_progress
from tests.limits import limit
from tests.tui.helpers import RecordingApp, settle

SIZE = (100, 32)
WEIGHTS = "reading the weights of {name}"


class HeldApp(RecordingApp):
    """The app, its load held at the phase `hold_at` (English msgid) until the test sets `release`."""

    def __init__(self, *args: Any, hold_at: str = WEIGHTS, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.hold_at = hold_at
        self.reached, self.release = threading.Event(), threading.Event()
        self.heard: list[str] = []

    def progress_listener(self, generation: int):  # type: ignore[no-untyped-def]
        tell = super().progress_listener(generation)

        def listen(progress: Progress) -> None:
            self.heard.append(progress.what.text)
            tell(progress)
            if progress.what.text == self.hold_at:
                self.reached.set()
                self.release.wait(limit(60))

        return listen

    def on_mount(self) -> None:
        from attn_tui.tui.widgets.model_pane import ModelPane

        self.query_one(ModelPane).phase_clock.clock = lambda: 0.0  # a held phase never says how long: one snapshot

    def on_unmount(self) -> None:
        self.release.set()  # a test that ends while the load is held lets the worker go
        super().on_unmount()


def held_app(folder: str, hold_at: str = WEIGHTS) -> HeldApp:
    return HeldApp(load_samples()["korean"].request, model=ModelAsk(folder, "the cat sat on the mat"),
                   hold_at=hold_at)


async def wait_held(app: HeldApp, pilot: Any) -> None:
    assert await asyncio.to_thread(app.reached.wait, 120), "the load never reached its phase"
    for _ in range(5):
        await pilot.pause()


@pytest.fixture
def llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A tiny llama folder, opened by a relative name (so what the screen says is the same every run)."""
    pytest.importorskip("transformers")
    from attn_tui.sources import transformer
    from tests.sources.tiny_models import SMALL, tiny

    tiny(tmp_path, "llama", dict(SMALL, num_key_value_heads=2), name="llama-tiny")
    monkeypatch.chdir(tmp_path)
    transformer.loaded_model.cache_clear()  # the loads are cached by name, and every test's folder has this one
    transformer.model_run.cache_clear()
    return "./llama-tiny"


def test_within_one_phase_at_most_one_report_each_interval_and_a_new_phase_at_once() -> None:
    now = [0.0]
    gate = Throttle(0.1, clock=lambda: now[0])
    reading, running = Msg("reading the weights"), Msg("running {model} on {n} tokens", model="m", n=3)
    passed = [gate.passes(Progress(reading, n, 1000)) for n in range(1000)]  # a flood within one instant
    assert passed.count(True) == 1
    assert gate.passes(Progress(running))  # a new phase's words do not wait
    now[0] = 0.05
    assert not gate.passes(Progress(running, 1))
    now[0] = 0.16
    assert gate.passes(Progress(running, 2))


def test_a_flood_of_reports_posts_a_handful_of_messages() -> None:
    posted: list[LoadProgressed] = []

    class Poster:
        def post_message(self, message: LoadProgressed) -> bool:
            posted.append(message)
            return True

    tell = post_progress(Poster(), 7)  # type: ignore[arg-type]
    for n in range(100_000):
        tell(Progress(Msg("reading the weights"), n, 100_000))
    assert 1 <= len(posted) <= 20  # one at once, then at most ~10 a second while the loop runs
    assert all(m.generation == 7 for m in posted)


@pytest.mark.models
async def test_a_folder_loading_shows_the_bar_and_its_words_then_the_result(llama: str) -> None:
    app = held_app(llama)
    async with app.run_test(size=SIZE) as pilot:
        await wait_held(app, pilot)
        box = app.query_one("#load-progress")
        assert box.display
        assert str(app.query_one("#load-phase").render()) == "reading the weights of './llama-tiny'"
        assert app.query_one("#load-bar", ProgressBar).total is None  # how far is not known: indeterminate
        assert "loading ./llama-tiny" in str(app.query_one("#model-status").render())
        bar_words = str(app.query_one(StageBar).render())  # the explorer says the phase too, not "loading torch…"
        assert "reading the weights of './llama-tiny'" in bar_words and "torch" not in bar_words
        await pilot.press("t")  # the words follow the language, the load still held
        await pilot.pause()
        assert str(app.query_one("#load-phase").render()) == "'./llama-tiny'의 가중치를 읽는 중"
        await pilot.press("t")
        await pilot.pause()
        app.release.set()
        await settle(pilot)
        assert not box.display and isinstance(app.trace.meta, TransformerRun)
        assert "✓" in str(app.query_one("#model-status").render())
        assert app.heard[:3] == ["reading config.json", "reading the tokenizer", WEIGHTS]
        assert app.heard[3] == "running {model} on {n} tokens"


@pytest.mark.models
async def test_a_load_that_fails_takes_its_bar_with_it(tmp_path: Path, llama: str) -> None:
    (Path(llama) / "tokenizer.json").write_text("{ not json")  # found only when the tokenizer is read
    app = held_app(llama, hold_at="never")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.pause()
        assert "reading the tokenizer" in app.heard, (app.error, app.notices)
        assert not app.query_one("#load-progress").display
        assert any(n.severity == "error" for n in app.notices)


@pytest.mark.models
def test_snapshot_of_a_load_held_at_its_weights(snap_compare, llama: str) -> None:
    app = held_app(llama)
    app.animation_level = "none"  # the indeterminate bar drawn still, so the snapshot is the same every run

    async def run_before(pilot: Any) -> None:
        await wait_held(app, pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


async def test_a_phase_that_knows_how_far_it_is_shows_its_share() -> None:
    from attn_tui.tui.widgets.model_pane import ModelPane
    from tests.tui.helpers import sample_app

    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.query_one(ModelPane)
        pane.show_progress(Progress(Msg("reading the weights"), 3, 8))  # what a loader counting its shards says
        await pilot.pause()
        bar = app.query_one("#load-bar", ProgressBar)
        assert (bar.total, bar.progress) == (8, 3) and app.query_one("#load-bar PercentageStatus").display
        assert "38%" in str(app.query_one("#load-bar PercentageStatus").render())
        pane.show_progress(Progress(Msg("reading the weights")))
        await pilot.pause()
        assert bar.total is None and not app.query_one("#load-bar PercentageStatus").display
        pane.show_progress(None)
        await pilot.pause()
        assert not app.query_one("#load-progress").display


def test_a_phase_says_how_long_it_has_taken_and_at_its_pace_what_is_left() -> None:
    now = [100.0]
    clock = PhaseClock(clock=lambda: now[0])
    converting = Msg("converting {name} (once): de-quantising its tensors", name="smollm2")
    assert clock.line(Progress(converting, 0, 272)) == "converting smollm2 (once): de-quantising its tensors"
    now[0] = 130.0  # 30 s for a quarter: 90 s left at that pace
    assert clock.line(Progress(converting, 68, 272)).endswith(" · 30 s, about 1 min 30 s left")
    now[0] = 131.0
    opaque = Msg("reading the weights of {name}", name="'m'")
    assert clock.line(Progress(opaque)) == "reading the weights of 'm'"  # a new phase: its own clock
    now[0] = 136.0
    assert clock.line(Progress(opaque)).endswith(" · 5 s so far")  # how far is not known: no estimate
    assert seconds(59.4) == "59 s" and seconds(125) == "2 min 05 s"
