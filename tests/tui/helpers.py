"""Helpers for driving the app in tests: build it on a sample, wait for its workers deterministically."""

from __future__ import annotations

import collections
import contextlib
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.pilot import Pilot
from textual.worker import WorkerCancelled

from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import VariantAsk
from attn_tui.tui.app import AttnApp
from tests.limits import limit

MAX_ROUNDS = 200


@dataclass(frozen=True)
class Notice:
    message: str
    title: str
    severity: str


class RecordingApp(AttnApp):
    """The app, keeping every notification it shows so a test can read them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.notices: list[Notice] = []

    def notify(self, message: Any, *, markup: bool = False, **options: Any) -> None:
        self.notices.append(Notice(str(message), str(options.get("title", "")), str(options.get("severity", ""))))
        super().notify(message, markup=markup, **options)


def sample_app(name: str = "korean", play_interval: float = 0.8, **settings: object) -> RecordingApp:
    """An app opened on a sample, optionally with some settings changed."""
    request = load_samples()[name].request
    if settings:
        request = VariantAsk(request.source, request.settings.replace(**settings), request.custom_mask)
    return RecordingApp(request, play_interval=play_interval)


async def settle(pilot: Pilot) -> None:
    """Wait until torch has loaded and the latest request's result has been shown.

    Alternates between waiting for every worker and letting the app handle the
    messages they posted, so no sleep or timing guess is involved.
    """
    app = pilot.app
    assert isinstance(app, AttnApp)
    for _ in range(MAX_ROUNDS):
        with contextlib.suppress(WorkerCancelled):  # a compute a newer request (or a failed load) superseded
            await app.workers.wait_for_complete()
        await pilot.pause()
        if app.torch_ready and app.state.generation > 0 and app.state.shown_generation == app.state.generation:
            await pilot.pause()
            return
    raise AssertionError("the app never settled")


async def until(pilot: Pilot, condition: Callable[[], object], seconds: float = 30.0) -> None:
    """Let the app run until `condition()` holds: what a test waits for is the event itself; the limit only fails
    a hang (scaled by tests/limits.py)."""
    deadline = time.monotonic() + limit(seconds)
    while not condition():
        assert time.monotonic() < deadline, "never happened"
        await pilot.pause(0.01)


async def searched(pilot: Pilot) -> None:
    """Wait until the command palette has listed its matches for what was typed: it gathers them in a worker,
    and each key typed cancels the search before, so the wait is for every worker to have ended."""
    await until(pilot, lambda: all(worker.is_finished for worker in pilot.app.workers))
    await pilot.pause()


def model_app(name: str, text: str, play_interval: float = 0.8, **options: Any) -> RecordingApp:
    """An app opened on a real or trained model (as `attn-tui --model NAME --text TEXT` does)."""
    from attn_tui.ask.settings import ModelAsk

    return RecordingApp(load_samples()["korean"].request, play_interval=play_interval,
                        model=ModelAsk(name, text, **options))


async def run_from_palette(pilot: Pilot, command: str) -> None:
    """Open the command palette, type `command`, and run the first match."""
    from textual.command import CommandPalette

    await pilot.press("ctrl+p")
    await pilot.pause()
    assert isinstance(pilot.app.screen, CommandPalette)
    await pilot.press(*command)
    await searched(pilot)
    await pilot.press("enter")
    await pilot.pause()


async def torch_calls_on_the_loop(pilot: Pilot, keys: list[str]) -> collections.Counter[str]:
    """Each torch call made on the event loop's thread while `keys` are pressed (the app settling after each), by
    the attn-tui line that made it: a TorchFunctionMode sees only the thread it was entered on, so the reader's
    and the compute worker's calls are theirs."""
    from torch.overrides import TorchFunctionMode

    where: collections.Counter[str] = collections.Counter()

    class Seen(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            for frame in reversed(traceback.extract_stack(limit=40)[:-1]):
                if "/attn_tui/" in frame.filename:
                    where[f"{frame.filename.split('/attn_tui/')[1]}:{frame.lineno} {frame.name}"] += 1
                    break
            else:
                where[str(func)] += 1
            return func(*args, **(kwargs or {}))

    await settle(pilot)
    with Seen():
        for key in keys:
            await pilot.press(key)
            await settle(pilot)
    return where
