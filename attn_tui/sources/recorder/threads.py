"""Attention computed in other threads of the user's program, recorded too.

A TorchFunctionMode is entered per thread: the recorder hears only the thread that
entered it. While a recording runs, every thread the program starts enters it first
(`Thread._bootstrap_inner` is what runs a new thread, whatever its class does with `run`),
and a task handed to a thread pool enters it in whichever worker runs it, even a pool made
before the recording. A thread already running when the recording began cannot be
entered from outside; such threads are named, so the trace can say what it did not see: daemon threads
too (a worker loop is often one), but not the helpers that the interpreter, torch, tqdm and other installed
libraries run for themselves (`helper`), whose names would only bury the user's own.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import sysconfig
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import thread as pool_thread
from pathlib import Path
from typing import Any

from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack


def _pool_worker(thread: threading.Thread) -> bool:
    return getattr(thread, "_target", None) is pool_thread._worker


def _library_roots() -> tuple[str, ...]:
    """Folders whose code is the interpreter's or an installed library's, and attn-tui's own."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if paths.get(key)}
    roots.add(str(Path(__file__).resolve().parents[2]))  # attn_tui/: the recorder's own threads
    return tuple(str(Path(root).resolve()) + "/" for root in roots)


def _runs(thread: threading.Thread) -> object:
    """What a thread runs: its target, a Timer's function, or its class's own `run`; None for a bare Thread."""
    if isinstance(thread, threading.Timer):
        return thread.function
    target = getattr(thread, "_target", None)
    if target is not None:
        return target
    run = type(thread).run
    return None if run is threading.Thread.run else run


def helper(thread: threading.Thread, roots: tuple[str, ...] | None = None) -> bool:
    """A thread the user did not write: what it runs is defined in the standard library, an installed package
    or attn-tui (tqdm's monitor, torch's pin-memory loop, a multiprocessing feeder, the recorder's preload).

    A library function bound to a model (`Thread(target=model.generate)`) is the user's: it is their model's
    attention that would go unrecorded.
    """
    runs = _runs(thread)
    while isinstance(runs, functools.partial):
        runs = runs.func
    if runs is None:
        return True
    bound = getattr(runs, "__self__", None)
    torch_nn = sys.modules.get("torch.nn")
    if bound is not None and torch_nn is not None and isinstance(bound, torch_nn.Module):
        return False
    function = getattr(runs, "__func__", runs)
    code = getattr(function, "__code__", None)
    if code is None and callable(runs):  # an object whose class writes __call__ in Python
        code = getattr(type(runs).__call__, "__code__", None)
    if code is None:
        return False  # a builtin or an odd callable: named, rather than missed in silence
    where = str(Path(code.co_filename).resolve())
    return where.startswith(_library_roots() if roots is None else roots)


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
        roots = _library_roots()
        self.unseen = [t.name for t in threading.enumerate()
                       if t is not here and t.is_alive() and not _pool_worker(t)
                       and t is not threading.main_thread() and not helper(t, roots)]
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
