"""Attention computed in other threads of the user's program, recorded too.

A TorchFunctionMode is entered per thread: the recorder hears only the thread that
entered it. While a recording runs, every thread the program starts enters it first
(`Thread._bootstrap_inner` is what runs a new thread, whatever its class does with `run`),
and a task handed to a thread pool enters it in whichever worker runs it, even a pool made
before the recording. A thread already running when the recording began cannot be
entered from outside; such threads are named, so the trace can say what it did not see.
"""

from __future__ import annotations

import contextlib
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import thread as pool_thread
from typing import Any

from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack


def _pool_worker(thread: threading.Thread) -> bool:
    return getattr(thread, "_target", None) is pool_thread._worker


class ThreadCover:
    """While `live`, new threads and pool tasks run under `mode`; `unseen` names the threads it could not enter."""

    def __init__(self, mode: TorchFunctionMode) -> None:
        self._mode = weakref.ref(mode)  # weak: the recorder holds its cover, and must be in no cycle
        self.live = False
        self.unseen: list[str] = []
        self._bootstrap: Callable[[threading.Thread], None] | None = None
        self._submit: Callable[..., Any] | None = None

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """The mode on this thread's stack for the block (once: a worker started under the recording has it)."""
        mode = self._mode()
        if not self.live or mode is None or mode in _get_current_function_mode_stack():  # type: ignore[no-untyped-call]
            yield
            return
        # the plain push: the recorder's own __enter__ would start another recording
        TorchFunctionMode.__enter__(mode)  # type: ignore[no-untyped-call]
        try:
            yield
        finally:
            TorchFunctionMode.__exit__(mode, None, None, None)  # type: ignore[no-untyped-call]

    def start(self) -> None:
        here = threading.current_thread()
        self.unseen = [t.name for t in threading.enumerate()
                       if t is not here and t.is_alive() and not t.daemon and not _pool_worker(t)
                       and t is not threading.main_thread()]
        bootstrap = self._bootstrap = threading.Thread._bootstrap_inner  # type: ignore[attr-defined]
        submit = self._submit = ThreadPoolExecutor.submit
        cover = self

        def bootstrap_under_recording(thread: threading.Thread) -> None:
            with cover.entered():
                bootstrap(thread)

        def submit_under_recording(pool: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any,
                                   **kwargs: Any) -> Any:
            def task(*a: Any, **k: Any) -> Any:
                with cover.entered():
                    return fn(*a, **k)

            return submit(pool, task, *args, **kwargs)

        self.live = True
        threading.Thread._bootstrap_inner = bootstrap_under_recording  # type: ignore[attr-defined]
        ThreadPoolExecutor.submit = submit_under_recording  # type: ignore[method-assign,assignment]
        self._patched = (bootstrap_under_recording, submit_under_recording)

    def stop(self) -> None:
        """Put threading back as it was (unless someone patched it since: then the wrappers just pass through)."""
        self.live = False
        if self._bootstrap is None:
            return
        ours_bootstrap, ours_submit = self._patched
        if threading.Thread._bootstrap_inner is ours_bootstrap:  # type: ignore[attr-defined]
            threading.Thread._bootstrap_inner = self._bootstrap  # type: ignore[attr-defined]
        if ThreadPoolExecutor.submit is ours_submit:
            ThreadPoolExecutor.submit = self._submit  # type: ignore[method-assign,assignment]
        self._bootstrap = self._submit = None
