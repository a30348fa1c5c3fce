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
import threading
from collections.abc import Iterator

_LOCK = threading.Lock()
_HELD = [0, False]  # [recordings running, whether the first of them froze the heap]


def hold() -> None:
    """A recording starts: freeze the heap, unless another recording did or the program froze objects itself."""
    with _LOCK:
        if _HELD[0] == 0:
            _HELD[1] = gc.isenabled() and gc.get_freeze_count() == 0
            if _HELD[1]:
                gc.freeze()
        _HELD[0] += 1


def release() -> None:
    """A recording ends: when it is the last one, what `hold` froze goes back to the collector."""
    with _LOCK:
        if _HELD[0] == 0:
            return
        _HELD[0] -= 1
        if _HELD[0] == 0 and _HELD[1]:
            _HELD[1] = False
            gc.unfreeze()


@contextlib.contextmanager
def thawed() -> Iterator[None]:
    """The heap handed back for a moment: `gc.get_referrers` searches no frozen object."""
    with _LOCK:
        frozen = _HELD[0] > 0 and _HELD[1]
        if frozen:
            gc.unfreeze()
        try:
            yield
        finally:
            if frozen:
                gc.freeze()
