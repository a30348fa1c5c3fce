"""Running a user's Python file under the recorder, as `attn-tui trace FILE.py [args…]` does.

The file runs as `__main__` with `sys.argv` set to it and its arguments, its folder first
on `sys.path`, exactly as `python FILE.py args…` would run it: it is the user's own code,
and running it is the point. Whatever goes wrong in it becomes one line naming the
file, the line and the exception, never a traceback.
"""

from __future__ import annotations

import os
import runpy
import signal
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, redirect_stderr, redirect_stdout, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from attn_tui.core.errors import AttnError, InputError
from attn_tui.core.files import quoted
from attn_tui.i18n import Msg
from attn_tui.sources.recorder import Recording

if TYPE_CHECKING:
    from attn_tui.core.stage import Trace

MAX_MESSAGE = 160  # characters of the user's exception message in the one line


class ScriptError(AttnError):
    """The user's file could not run to the end, or computed no attention."""


def sample_scripts() -> dict[str, Path]:
    """The shipped sample scripts by name (the file name without .py)."""
    from attn_tui.core.samples import samples_dir

    folder = samples_dir() / "scripts"
    return {p.stem: p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")}


def sample_script(name: str) -> Path:
    found = sample_scripts()
    if name not in found:
        raise InputError(Msg("no sample script called {name}; the sample scripts are: {names}", name=quoted(name),
                             names=", ".join(found)))
    return found[name]


class _Tracked:
    """The script's stdout or stderr, remembering whether it stopped mid-line (`input("name: ")`, a progress bar),
    so that the one line that reports the script's end starts a line of its own."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.mid_line = False
        self.closed = False

    def write(self, text: str) -> int:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        if text:
            self.mid_line = not text.endswith("\n")
        written = self.stream.write(text)
        return written if isinstance(written, int) else len(text)

    def end_line(self) -> None:
        if self.mid_line:
            self.stream.write("\n")
            self.stream.flush()
            self.mid_line = False

    def close(self) -> None:
        """The file closing its stdout closes its own view of it: attn-tui still has to print the trace or the error."""
        with suppress(Exception):
            self.stream.flush()
        self.closed = True

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


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


class _TimedOut(BaseException):
    """Raised in the user's code when --timeout runs out; a BaseException, so `except Exception` there lets it by."""


_deadline: list[float] = []  # monotonic time the running file must end by; a child it forks inherits it


def _rearm_in_child() -> None:
    """A timer is not inherited across fork: a child of the file gets what is left of its parent's time."""
    if _deadline:
        signal.setitimer(signal.ITIMER_REAL, max(0.001, _deadline[0] - time.monotonic()))


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_rearm_in_child)


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    """Interrupt the main thread after `seconds` (0: never), even in `time.sleep` or `input()`."""
    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGALRM"):
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise _TimedOut

    previous = signal.signal(signal.SIGALRM, expire)
    _deadline[:] = [time.monotonic() + seconds]
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        _deadline.clear()
        signal.signal(signal.SIGALRM, previous)


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


def run_script(path: str | Path, args: Sequence[str] = (), max_calls: int = 64, quiet_stdout: bool = False,
               timeout: int = 0) -> Trace:
    """Run `path` with `args` under the recorder and return the trace of the attention it computed.

    `timeout` seconds (0: none) bound the run: a file that sleeps or loops forever is stopped
    with one line, as any other failure of the file is.
    """
    script = Path(path)
    try:
        is_file = script.is_file()
    except (OSError, ValueError):
        is_file = False
    if not is_file:
        raise InputError(Msg("no such file: {path}", path=quoted(str(path))) if not script.exists() else
                         Msg("{path} is not a file", path=quoted(str(path))))
    absolute = str(script.resolve())
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.argv = [str(script), *args]
    sys.path.insert(0, os.path.dirname(absolute))
    recording = Recording(max_calls=max_calls, script=script.name)
    parent = os.getpid()
    out, err = _Tracked(sys.stderr if quiet_stdout else sys.stdout), _Tracked(sys.stderr)
    try:
        with redirect_stdout(out), redirect_stderr(err), recording, _time_limit(timeout), _exit_as_sys_exit(parent):
            runpy.run_path(absolute, run_name="__main__")
        _leave_if_forked(parent, 0)
    except SystemExit as exc:
        _leave_if_forked(parent, exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1)
        if isinstance(exc.code, str):  # sys.exit("message"): Python prints the message and exits with 1
            raise ScriptError(Msg("{script} exited: {message}", script=script.name, message=_short(exc.code))) from None
        if exc.code not in (None, 0):
            raise ScriptError(Msg("{script} exited with status {code}", script=script.name, code=exc.code)) from None
    except _TimedOut:
        _leave_if_forked(parent, 124)
        raise ScriptError(Msg("{script} ran for {seconds} s and was stopped (--timeout SECONDS sets the limit, 0 "
                              "none)", script=script.name, seconds=timeout)) from None
    except KeyboardInterrupt:
        _leave_if_forked(parent, 130)
        raise
    except BaseException as exc:
        _leave_if_forked(parent, 1)
        raise ScriptError(describe_failure(exc, script)) from None
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for stream in (out, err):
            stream.end_line()
    from attn_tui.sources.recorder.build import NoAttentionError

    try:
        return recording.trace
    except NoAttentionError as exc:
        raise ScriptError(Msg("{script} ran, but no attention was recorded: {reason}", script=script.name,
                              reason=str(exc))) from None
