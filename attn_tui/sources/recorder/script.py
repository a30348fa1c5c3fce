"""Running a user's Python file under the recorder, in the process `attn-tui trace FILE.py [args…]` starts for it.

The file runs as `__main__` with `sys.argv` set to it and its arguments, its folder first
on `sys.path`, exactly as `python FILE.py args…` would run it: it is the user's own code,
and running it is the point. Whatever goes wrong in it becomes one line naming the
file, the line and the exception, never a traceback. `supervise` holds that process by the clock.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from attn_tui.errors import AttnError, InputError
from attn_tui.i18n import Msg
from attn_tui.io.files import quoted
from attn_tui.sources.recorder import Recording
from attn_tui.trace.meta import RecordedRun

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace

MAX_MESSAGE = 160  # characters of the user's exception message in the one line


class ScriptError(AttnError):
    """The user's file could not run to the end, or computed no attention."""


def sample_scripts() -> dict[str, Path]:
    """The shipped sample scripts by name (the file name without .py)."""
    from attn_tui.ask.samples import sample_script_paths

    return sample_script_paths()


def sample_script(name: str) -> Path:
    found = sample_scripts()
    if name not in found:
        raise InputError(Msg("no sample script called {name}; the sample scripts are: {names}", name=quoted(name),
                             names=", ".join(found)))
    return found[name]


def _short(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 1] + "…"


def describe_failure(exc: BaseException, script: Path) -> str:
    """`attention.py:31: ValueError: …`: where in the user's code it failed, the exception and its message."""
    from attn_tui.sources.recorder.whose import is_user_file

    if isinstance(exc, SyntaxError):
        line = f":{exc.lineno}" if exc.lineno else ""  # a file with a null byte has no line to name
        where = f"{os.path.basename(exc.filename or str(script))}{line}"
        return f"{where}: SyntaxError: {_short(exc.msg)}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    frame = frames[-1] if frames else None
    where = f"{os.path.basename(frame.filename)}:{frame.lineno}: " if frame is not None else f"{script.name}: "
    message = _short(str(exc))
    return f"{where}{type(exc).__name__}" + (f": {message}" if message else "")


_exit = os._exit  # the real one: the file runs with its own (see _exit_as_sys_exit)


def _leave_if_forked(parent: int, code: int) -> None:
    """A child the file forked must end where the file's own code ends, never go on to print or open the app."""
    if os.getpid() != parent:
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):
                stream.flush()
        _exit(code)


@contextmanager
def _exit_as_sys_exit(parent: int) -> Iterator[None]:
    """While the file runs, `os._exit` in attn-tui's own process ends the file as `sys.exit` would.

    The file runs in attn-tui's process, so a real `os._exit` there would end attn-tui at once, silently and
    with the file's status, and the attention recorded so far would be lost. A child the file forked exits
    for real.
    """
    def leave(status: int) -> NoReturn:
        if os.getpid() != parent:
            _exit(status)
        raise SystemExit(status)

    os._exit = leave
    try:
        yield
    finally:
        os._exit = _exit


def check_script(path: str | Path) -> Path:
    """The file to run, refused with one line when it is not one (before any process is started for it)."""
    script = Path(path)
    try:
        is_file = script.is_file()
    except (OSError, ValueError):
        is_file = False
    if not is_file:
        raise InputError(Msg("no such file: {path}", path=quoted(str(path))) if not script.exists() else
                         Msg("{path} is not a file", path=quoted(str(path))))
    return script


def run_here(path: str | Path, args: Sequence[str] = (), max_calls: int = 64, budget: int | None = None,
             over_budget: Callable[[int, int], None] | None = None) -> Trace:
    """Run `path` with `args` under the recorder in this process and return the trace of the attention it computed.

    `attn-tui trace` calls it in a child process of its own (see `supervise`), which is what bounds its time:
    nothing the file does to signals, timers or exceptions reaches the clock. `budget` bytes bound what
    the recording holds; `over_budget(kept, budget)` is called the moment the calls it keeps pass it.
    """
    script = check_script(path)
    absolute = str(script.resolve())
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, os.path.dirname(absolute))
    recording = Recording(max_calls=max_calls, script=script.name)
    recording.recorder.budget = budget
    recording.recorder.over_budget = over_budget
    parent = os.getpid()
    failure: str | Msg | None = None  # how the file stopped, when it did not end as a program ends well
    try:
        with recording, _exit_as_sys_exit(parent):
            runpy.run_path(absolute, run_name="__main__")
        _leave_if_forked(parent, 0)
    except SystemExit as exc:
        _leave_if_forked(parent, exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
        if isinstance(exc.code, str):  # sys.exit("message"): Python prints the message and exits with 1
            failure = Msg("{script} exited: {message}", script=script.name, message=_short(exc.code))
        elif exc.code not in (None, 0):
            failure = Msg("{script} exited with status {code}", script=script.name, code=exc.code)
    except BaseException as exc:  # KeyboardInterrupt too: the file's own, or Ctrl-C, is one line like any other
        _leave_if_forked(parent, 1)
        failure = describe_failure(exc, script)
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    from attn_tui.sources.recorder.build import NoAttentionError

    try:
        trace = recording.recorded  # built here, in the source's own process: the parent's door hands it on
    except NoAttentionError as exc:
        if failure is not None:
            raise ScriptError(failure) from None
        raise ScriptError(Msg("{script} ran, but no attention was recorded: {reason}", script=script.name,
                              reason=str(exc))) from None
    if failure is not None:  # what it computed before it stopped is kept, and said to be all there is
        trace.warn(Msg("{failure} — shown: the attention it computed before it stopped", failure=failure))
        if isinstance(trace.meta, RecordedRun):
            trace.meta = replace(trace.meta, stopped=str(failure))
    return trace
