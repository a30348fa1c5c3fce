"""What every handler of a worker's result shares, and what a compute worker posts as a trace grows."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from textual.app import App
from textual.worker import get_current_worker

from attn_tui.tui.messages import LoadProgressed, TraceGrew

if TYPE_CHECKING:
    from attn_tui.sources.progress import Progress
    from attn_tui.trace.shown import Shown

Handler = TypeVar("Handler", bound=Callable[..., None])


def while_running(handler: Handler) -> Handler:
    """A worker's result that arrives while the app shuts down (its panes already gone) is dropped, not handled:
    quitting while a model loads must not end in a traceback."""

    @functools.wraps(handler)
    def handle(self: Any, message: Any) -> None:  # the App, or one of its controllers (both say is_running)
        if self.is_running:
            handler(self, message)

    return handle  # type: ignore[return-value]


class SupersededError(Exception):
    """A newer ask cancelled this worker between two steps: the rest of its trace is not made."""


def post_growth(app: App[int], generation: int) -> Callable[[Shown], None]:
    """What a compute worker hands the door as `on_step`: each step's snapshot goes up as a `TraceGrew`, and a
    worker that a newer ask cancelled stops at its next step instead of decoding on for nobody."""
    worker = get_current_worker()

    def grew(shown: Shown) -> None:
        if worker.is_cancelled:
            raise SupersededError
        app.post_message(TraceGrew(generation, shown, shown.trace.steps()))

    return grew


PROGRESS_INTERVAL = 0.1  # seconds between two reports of the same phase that reach the app: at most ~10 a second


class Throttle:
    """Which of a load's reports go up: each new phase at once (its words must not wait), and within one phase at
    most one every `interval` seconds, so a loader that reports every tensor cannot flood the message queue."""

    def __init__(self, interval: float = PROGRESS_INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval, self.clock = interval, clock
        self.last: Progress | None = None
        self.at = -float("inf")
        self.lock = threading.Lock()  # a loader may report from threads of its own

    def passes(self, progress: Progress) -> bool:
        with self.lock:
            now = self.clock()
            if self.last is not None and progress.what == self.last.what and now - self.at < self.interval:
                return False
            self.last, self.at = progress, now
            return True


def post_progress(app: App[int], generation: int, throttle: Throttle | None = None) -> Callable[[Progress], None]:
    """What a compute worker hands the door as `on_progress`: the reports that pass the throttle go up as
    `LoadProgressed`."""
    gate = throttle or Throttle()

    def progressed(progress: Progress) -> None:
        if gate.passes(progress):
            app.post_message(LoadProgressed(generation, progress))

    return progressed
