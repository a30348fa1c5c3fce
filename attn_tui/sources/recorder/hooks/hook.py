"""What a hook is: one special case the recorder takes in while it records, entered as a recording starts and left
as it ends, told of each attention call the recording keeps.

The recorder's core (capture.Recorder) hears every torch call and keeps the ones that make attention; what it must
change in the process to hear them all (threads, the compiler's stance, flex_attention's hidden call, the
collector) and what it lets go once a call is kept (pruning) are hooks, declared once, in order, in `HOOKS`
(hooks/__init__.py). A hook sees the recorder as `Recorder` below, a Protocol, so no hook imports the core that
walks them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from attn_tui.sources.recorder.node import Node


class ThreadsEntered(Protocol):
    """What the threads hook leaves on a recording (threads.ThreadCover): the trace names the running threads it
    could not enter."""

    unseen: list[str]

    def stop(self) -> None: ...


class Recorder(Protocol):
    """The recording as its hooks see it (capture.Recorder)."""

    threads: ThreadsEntered | None  # set by the threads hook as the recording starts

    def record_call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any,
                    caller: Any) -> None:
        """A call the mode could not see (flex_attention's), handed in to be kept like any other."""


class RecorderHook:
    """One special case of the recorder. Each method does nothing here; a hook overrides what it needs.

    The recorder enters the hooks in the order `HOOKS` declares, before its mode listens, and leaves them in the
    reverse order, after its mode stopped listening: every hook's `exit` runs, even when another's failed (the
    first failure is raised after them all), and a hook whose `enter` failed is not left.
    """

    def enter(self, recorder: Recorder) -> None:
        """A recording starts."""

    def exit(self, recorder: Recorder) -> None:
        """A recording ends (also when the recorded code raised): put back what `enter` changed."""

    def anchored(self, recorder: Recorder, call: Node) -> None:
        """The recording keeps an attention call (a softmax, an SDPA, flex_attention or MultiheadAttention call),
        before the bytes it holds are counted against the recording's budget."""


class Held(RecorderHook):
    """A change to the process held while any recording runs (process_wide.py): `hold` as each recording starts,
    `release` as each ends; the first makes the change and the last undoes it."""

    def __init__(self, hold: Callable[[], None], release: Callable[[], None]) -> None:
        self._hold, self._release = hold, release

    def enter(self, recorder: Recorder) -> None:
        self._hold()

    def exit(self, recorder: Recorder) -> None:
        self._release()
