"""Code compiled with `torch.compile` run as it is written while a recording runs, so that the recorder sees it.

A compiled function hands its torch calls to dynamo, which would trace the recording's mode into its graph: the
mode's Python (the user's line, the values it keeps) cannot run there, dynamo warns about it at every call, and a
`fullgraph=True` compile fails. The compiler's "force_eager" stance runs each compiled function as the plain
Python it was compiled from, so every call it makes is recorded with the numbers eager torch gives (the same up to
rounding). The stance is set while recordings run and the program's own is put back when the last ends, unless
the program set another meanwhile. flex_attention compiled on its own is the exception (`compile_this_call`): it is
recorded compiled, since its eager path would hold each call's whole score matrix. The stance is the process's: while
a recording runs, compiled code in threads it does not cover runs as written too, and flex_attention called from
inside a larger compiled function takes its eager path, which holds the call's B·H·L·S scores at once (a program
compiled for flex's kernel at a long context needs that memory while it is recorded).

Importing dynamo costs about a second, so it is not imported for this: when a program first imports it during a
recording (its first `torch.compile`), the stance is set as soon as the import has run (`_Watch`). If the stance
cannot be set, the mode steps aside while dynamo traces (`capture.Recorder.__torch_function__`), and the compiled
code runs compiled and unseen rather than failing.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.machinery
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

from attn_tui.sources.recorder.hooks.hook import Held
from attn_tui.sources.recorder.hooks.process_wide import WhileRecording

DYNAMO = "torch._dynamo"


def _force_eager() -> tuple[Any, Any] | None:
    """(the program's stance, ours) once ours is set; None while dynamo is not loaded (it is then watched for)."""
    if sys.modules.get(f"{DYNAMO}.eval_frame") is None:
        _watch()
        return None
    import torch.compiler

    try:
        changed = torch.compiler.set_stance("force_eager")
    except Exception:  # refused inside a compiled region (a recording begun there): the mode steps aside instead
        return None
    return changed.prev, changed.stance


def _put_back(made: tuple[Any, Any]) -> None:
    prior, ours = made
    eval_frame = sys.modules.get(f"{DYNAMO}.eval_frame")
    if eval_frame is None or getattr(eval_frame, "_stance", ours) is not ours:
        return  # the program set a stance of its own meanwhile: it stays
    import torch.compiler

    with contextlib.suppress(Exception):
        torch.compiler.set_stance(prior.stance, skip_guard_eval_unsafe=prior.skip_guard_eval_unsafe,
                                  force_backend=prior.backend)


_STANCE = WhileRecording(_force_eager, _put_back)
hold = _STANCE.hold  # a recording starts: compiled code runs eagerly from now on
_PAUSED = [False]  # the program's stance is back for one compiled call (`compile_this_call`)


def compile_this_call() -> None:
    """The program's own stance back for the compiled call about to start: flex_attention compiled on its own,
    whose kernel never holds a call's whole score matrix (its eager path does; the recording lays long calls out
    by tiles). The call is recorded by flex's wrapper, which dynamo compiles, and `eager_again` follows it."""
    with _STANCE.lock:
        if _STANCE.made is None or _PAUSED[0]:
            return
        prior, ours = _STANCE.made
        _put_back((prior, ours))
        _PAUSED[0] = True


def eager_again() -> None:
    """The paused call has run: compiled code runs as written again (while recordings run)."""
    with _STANCE.lock:
        if not _PAUSED[0]:
            return
        _PAUSED[0] = False
        made = _STANCE.made
        if made is not None and _STANCE.running:
            again = _force_eager()
            _STANCE.made = (made[0], again[1]) if again is not None else None


def release() -> None:
    """A recording ends: when it is the last, the program's stance comes back and dynamo's import is not watched."""
    _STANCE.release()
    if not _STANCE.running:
        _PAUSED[0] = False
        _unwatch()


class _Watch(importlib.abc.MetaPathFinder):
    """Finds nothing itself. When dynamo is imported it lets the path finder find it, and sets the stance once the
    package has run (while a recording still runs)."""

    def find_spec(self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None) -> Any:
        if fullname != DYNAMO:
            return None
        _unwatch()
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if spec is None or run is None:
            return spec  # None: the other finders look as they would have

        def exec_module(module: ModuleType) -> None:
            run(module)
            _STANCE.make_late()

        loader.exec_module = exec_module  # type: ignore[union-attr]  # this spec's own loader, made for this import
        return spec


_WATCH = _Watch()
_WATCH_LOCK = threading.Lock()


def _watch() -> None:
    with _WATCH_LOCK:
        if _WATCH not in sys.meta_path:
            sys.meta_path.insert(0, _WATCH)


def _unwatch() -> None:
    with _WATCH_LOCK, contextlib.suppress(ValueError):
        sys.meta_path.remove(_WATCH)


# compiled code runs as written while recordings run; the program's stance comes back after the last
COMPILE_STANCE = Held(hold, release)
