"""Attention computed in other threads of the user's program, recorded too.

A TorchFunctionMode is entered per thread: the recorder hears only the thread that
entered it. While a recording runs, every thread the recorded code starts enters it first
(`Thread._bootstrap_inner` is what runs a new thread, whatever its class does with `run`),
and a task it hands to a thread pool enters it in whichever worker runs it, even a pool made
before the recording. A thread or task another thread starts meanwhile (a recording in one
worker while the program goes on elsewhere) is not the recorded code's and is left alone.
A thread already running when the recording began cannot be entered from outside; such threads
are named, so the trace can say what it did not see: daemon threads too (a worker loop is often
one), but not the helpers that the interpreter, torch, tqdm and other installed libraries run for
themselves (`helper`), whose names would only bury the user's own.
"""

from __future__ import annotations

import contextlib
import functools
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import thread as pool_thread
from typing import Any

from torch.overrides import TorchFunctionMode, _get_current_function_mode_stack

from attn_tui.sources.recorder.hooks.hook import Recorder, RecorderHook
from attn_tui.sources.recorder.hooks.process_wide import WhileRecording
from attn_tui.sources.recorder.whose import is_library_file


def _pool_worker(thread: threading.Thread) -> bool:
    return getattr(thread, "_target", None) is pool_thread._worker


def _runs(thread: threading.Thread) -> object:
    """What a thread runs: its target, a Timer's function, or its class's own `run`; None for a bare Thread."""
    if isinstance(thread, threading.Timer):
        return thread.function
    target = getattr(thread, "_target", None)
    if target is not None:
        return target
    run = type(thread).run
    return None if run is threading.Thread.run else run


def helper(thread: threading.Thread) -> bool:
    """A thread the user did not write: what it runs is library code (`whose.is_library_file`: the interpreter's,
    torch's, an installed package's or attn-tui's; tqdm's monitor, torch's pin-memory loop, a multiprocessing
    feeder, the recorder's preload).

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
    return is_library_file(code.co_filename)


class ThreadCover:
    """While `live`, the threads and pool tasks the recorded code starts run under `mode`; `unseen` names the
    threads it could not enter. threading is patched once for all covers (`_PATCHED`: the first recording to start
    patches it, the last to end puts it back, in whatever order recordings in several threads end)."""

    def __init__(self, mode: TorchFunctionMode) -> None:
        self._mode = weakref.ref(mode)  # weak: the recorder holds its cover, and must be in no cycle
        self.live = False
        self.unseen: list[str] = []
        self.started: weakref.WeakSet[threading.Thread] = weakref.WeakSet()  # threads the recorded code started

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

    def recorded_here(self) -> bool:
        """The code running in this thread is recorded: the thread that entered the recording, or one it covers.
        A thread or task it starts is covered too; one another thread starts is not."""
        mode = self._mode()
        return self.live and mode is not None and mode in _get_current_function_mode_stack()  # type: ignore[no-untyped-call]

    def start(self) -> None:
        here = threading.current_thread()
        self.unseen = [t.name for t in threading.enumerate()
                       if t is not here and t.is_alive() and not _pool_worker(t)
                       and t is not threading.main_thread() and not helper(t)]
        self.live = True
        with _LOCK:
            _COVERS.append(self)
        _PATCHED.hold()

    def stop(self) -> None:
        """This recording's threads are no longer entered; threading is put back when no recording runs."""
        if not self.live:
            return
        self.live = False
        with _LOCK, contextlib.suppress(ValueError):
            _COVERS.remove(self)
        _PATCHED.release()


_LOCK = threading.Lock()
_COVERS: list[ThreadCover] = []  # the live covers, in the order their recordings began (outermost first)


def _covering(test: Callable[[ThreadCover], bool]) -> list[ThreadCover]:
    with _LOCK:
        return [cover for cover in _COVERS if test(cover)]


def _under(covers: list[ThreadCover], run: Callable[[], Any]) -> Any:
    with contextlib.ExitStack() as stack:
        for cover in covers:
            stack.enter_context(cover.entered())
        return run()


def _patch() -> tuple[Callable[..., Any], ...]:
    """Wrap Thread.start, Thread._bootstrap_inner and ThreadPoolExecutor.submit; what they were, to put back."""
    start, bootstrap = threading.Thread.start, threading.Thread._bootstrap_inner  # type: ignore[attr-defined]
    submit = ThreadPoolExecutor.submit

    def start_under_recording(thread: threading.Thread) -> None:
        if not _pool_worker(thread):  # a pool's worker outlives the task that started it: tasks are covered one by one
            for cover in _covering(lambda cover: cover.recorded_here()):
                cover.started.add(thread)
        start(thread)

    def bootstrap_under_recording(thread: threading.Thread) -> None:
        _under(_covering(lambda cover: thread in cover.started), lambda: bootstrap(thread))

    def submit_under_recording(pool: ThreadPoolExecutor, fn: Callable[..., Any], /, *args: Any,
                               **kwargs: Any) -> Any:
        covers = _covering(lambda cover: cover.recorded_here())
        if not covers:
            return submit(pool, fn, *args, **kwargs)
        return submit(pool, lambda *a, **k: _under(covers, lambda: fn(*a, **k)), *args, **kwargs)

    threading.Thread.start = start_under_recording  # type: ignore[method-assign,assignment]
    threading.Thread._bootstrap_inner = bootstrap_under_recording  # type: ignore[attr-defined]
    ThreadPoolExecutor.submit = submit_under_recording  # type: ignore[method-assign,assignment]
    return start, bootstrap, submit, start_under_recording, bootstrap_under_recording, submit_under_recording


def _unpatch(made: tuple[Callable[..., Any], ...]) -> None:
    """Put threading back as it was (unless someone patched it since: then the wrappers just pass through)."""
    start, bootstrap, submit, ours_start, ours_bootstrap, ours_submit = made
    if threading.Thread.start is ours_start:
        threading.Thread.start = start  # type: ignore[method-assign]
    if threading.Thread._bootstrap_inner is ours_bootstrap:  # type: ignore[attr-defined]
        threading.Thread._bootstrap_inner = bootstrap  # type: ignore[attr-defined]
    if ThreadPoolExecutor.submit is ours_submit:
        ThreadPoolExecutor.submit = submit  # type: ignore[method-assign]


_PATCHED = WhileRecording(_patch, _unpatch)


class Threads(RecorderHook):
    """The threads and pool tasks the recorded code starts are recorded too; those already running are named."""

    def enter(self, recorder: Recorder) -> None:
        assert isinstance(recorder, TorchFunctionMode)  # capture.Recorder: the mode each covered thread enters
        cover = ThreadCover(recorder)
        recorder.threads = cover
        cover.start()

    def exit(self, recorder: Recorder) -> None:
        if recorder.threads is not None:
            recorder.threads.stop()


THREADS = Threads()
