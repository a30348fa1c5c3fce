"""The app's reader: one thread on which every read of a trace for the screen runs, so the event loop never does.

A key changes where the user is and returns; what that place shows (a stage's grid and the tiles
in view, the heads of a layer, a cell's arithmetic, the atlas) is read here and drawn when it
arrives. One thread, so reads of the same trace never overlap (a lazy stage fills its caches as it
is read), and in the order asked: what a newer ask supersedes is dropped by its asker, not here.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

THREAD = "attn-tui-reader"
# the worker groups that wait on the reader (a newer ask of the same group supersedes an older one)
FRAME, CELL, CELLS, ATLAS = "frame", "cell", "cells", "atlas"
READS = (FRAME, CELL, CELLS, ATLAS)


class Reader:
    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None

    async def read(self, read: Callable[..., T], *args: Any) -> T:
        """`read(*args)`, run on the reader thread; a cancelled awaiter leaves a read already started to end
        there, and one not started yet is never run."""
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=THREAD)
        return await asyncio.wrap_future(self._pool.submit(read, *args))

    def close(self) -> None:
        """No read starts after this; one running ends on its own (it holds nothing of the screen)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
