"""What every handler of a worker's result shares, and what a compute worker posts as a trace grows."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from textual.app import App
from textual.worker import get_current_worker

from attn_tui.tui.messages import TraceGrew

if TYPE_CHECKING:
    from attn_tui.trace.shown import Shown

Handler = TypeVar("Handler", bound=Callable[..., None])


def while_running(handler: Handler) -> Handler:
    """A worker's result that arrives while the app shuts down (its panes already gone) is dropped, not handled:
    quitting while a model loads must not end in a traceback."""

    @functools.wraps(handler)
    def handle(self: App[int], message: Any) -> None:
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
