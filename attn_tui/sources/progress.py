"""What a long load is doing now, told to whoever listens: the app's progress bar, nothing else.

A loader calls `report(what, done, total)` at each phase of its work (assembling a file,
converting it, reading weights, running the model); a caller of the door listens for one
run with `listening(callback)`. A context variable holds the listener, so a worker thread
that runs the door hears its own run's reports and no other's; without a listener a report
costs one lookup.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from attn_tui.i18n import Msg


@dataclass(frozen=True)
class Progress:
    """One phase of a load: what is being done, and how far (`total` None: how far is not known)."""

    what: Msg
    done: float = 0.0
    total: float | None = None

    @property
    def fraction(self) -> float | None:
        """done / total in 0…1, or None when the total is not known."""
        if not self.total:
            return None
        return min(1.0, max(0.0, self.done / self.total))


OnProgress = Callable[[Progress], None]
_listener: ContextVar[OnProgress | None] = ContextVar("attn_tui_progress", default=None)


def report(what: Msg, done: float = 0.0, total: float | None = None) -> None:
    """Tell the listener of this run (if any) what the load is doing now."""
    listener = _listener.get()
    if listener is not None:
        listener(Progress(what, done, total))


@contextmanager
def listening(on_progress: OnProgress | None) -> Iterator[None]:
    """Within the block, `report` calls `on_progress` (None: nobody listens)."""
    token = _listener.set(on_progress)
    try:
        yield
    finally:
        _listener.reset(token)
