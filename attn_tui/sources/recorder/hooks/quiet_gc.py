"""The garbage collector kept off the program's old objects while a recording runs.

A recording makes thousands of small objects that live until the trace is built (a Node, its
inputs, a weak reference per recorded tensor). They survive young collections and so, now and
then, trigger a full one, which walks every object the program holds: with transformers loaded,
some 400,000 objects and hundreds of milliseconds inside the model's forward. `gc.freeze()` moves
the objects that exist when the recording starts out of the collector's sight, so a collection
during the recording walks only what the recording made (young cycles are still collected, so
memory does not grow); `gc.unfreeze()` hands them back when the last recording ends.

A program that froze objects itself (a server before it forks) is left as it is: its frozen
objects could not be told from ours when they are handed back.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

from attn_tui.sources.recorder.hooks.hook import Held
from attn_tui.sources.recorder.hooks.process_wide import WhileRecording


def _freeze() -> bool | None:
    if gc.isenabled() and gc.get_freeze_count() == 0:
        gc.freeze()
        return True
    return None


def _unfreeze(_: bool) -> None:
    gc.unfreeze()


_FROZEN = WhileRecording(_freeze, _unfreeze)
hold = _FROZEN.hold  # a recording starts: freeze the heap, unless another recording did or the program froze it
release = _FROZEN.release  # a recording ends: when it is the last one, what `hold` froze goes back


@contextlib.contextmanager
def thawed() -> Iterator[None]:
    """The heap handed back for a moment: `gc.get_referrers` searches no frozen object."""
    with _FROZEN.lock:
        frozen = _FROZEN.made is not None
        if frozen:
            gc.unfreeze()
        try:
            yield
        finally:
            if frozen:
                gc.freeze()


# the heap frozen while recordings run; what the first froze goes back when the last ends
FROZEN_HEAP = Held(hold, release)
