"""A change to the whole process that lasts while any recording runs: made by the first, undone by the last.

Recordings nest and run in several threads at once (`attn_tui.record()` in each), while the heap's freeze
(`quiet_gc`) and the compiler's stance (`eager`) belong to the process: one count, under a lock, decides
who makes the change and who undoes it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

Made = TypeVar("Made")


class WhileRecording(Generic[Made]):
    """`make()` when the first recording starts (what it returns is what `undo` is given when the last one ends;
    None: nothing was changed, nothing to undo)."""

    def __init__(self, make: Callable[[], Made | None], undo: Callable[[Made], None]) -> None:
        self.lock = threading.Lock()
        self.running = 0  # recordings now running
        self.made: Made | None = None  # what the change left to undo
        self._make = make
        self._undo = undo

    def hold(self) -> None:
        with self.lock:
            if self.running == 0:
                self.made = self._make()
            self.running += 1

    def release(self) -> None:
        with self.lock:
            if self.running == 0:
                return
            self.running -= 1
            if self.running == 0 and self.made is not None:
                made, self.made = self.made, None
                self._undo(made)

    def make_late(self) -> None:
        """Make the change now if recordings run and it was not made (what it needs was not there when they
        started)."""
        with self.lock:
            if self.running and self.made is None:
                self.made = self._make()
