"""Running a user's Python file under the recorder, as `attn-tui trace FILE.py [args…]` does.

The file runs as `__main__` with `sys.argv` set to it and its arguments, its folder first
on `sys.path`, exactly as `python FILE.py args…` would run it: it is the user's own code,
and running it is the point. Whatever goes wrong in it becomes one line naming the
file, the line and the exception, never a traceback.
"""

from __future__ import annotations

import os
import runpy
import sys
import traceback
from collections.abc import Sequence
from contextlib import nullcontext, redirect_stdout
from pathlib import Path
from typing import TYPE_CHECKING

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


def _short(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 1] + "…"


def describe_failure(exc: BaseException, script: Path) -> str:
    """`attention.py:31: ValueError: …`: where in the user's code it failed, the exception and its message."""
    from attn_tui.sources.recorder.capture import is_user_file

    if isinstance(exc, SyntaxError):
        where = f"{os.path.basename(exc.filename or str(script))}:{exc.lineno}"
        return f"{where}: SyntaxError: {_short(exc.msg)}"
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if is_user_file(f.filename)]
    frame = frames[-1] if frames else None
    where = f"{os.path.basename(frame.filename)}:{frame.lineno}: " if frame is not None else f"{script.name}: "
    message = _short(str(exc))
    return f"{where}{type(exc).__name__}" + (f": {message}" if message else "")


def run_script(path: str | Path, args: Sequence[str] = (), max_calls: int = 64, quiet_stdout: bool = False) -> Trace:
    """Run `path` with `args` under the recorder and return the trace of the attention it computed."""
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
    try:
        with redirect_stdout(sys.stderr) if quiet_stdout else nullcontext(), recording:
            runpy.run_path(absolute, run_name="__main__")
    except SystemExit as exc:
        if exc.code not in (None, 0):
            raise ScriptError(Msg("{script} exited with status {code}", script=script.name, code=exc.code)) from None
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise ScriptError(describe_failure(exc, script)) from None
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
    from attn_tui.sources.recorder.build import NoAttentionError

    try:
        return recording.trace
    except NoAttentionError as exc:
        raise ScriptError(Msg("{script} ran, but no attention was recorded: {reason}", script=script.name,
                              reason=str(exc))) from None
