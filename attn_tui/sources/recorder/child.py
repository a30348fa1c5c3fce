"""The process `attn-tui trace` runs the user's file in: run it under the recorder, hand the trace back, and go.

Started by `supervise.run_script` in a process group of its own, with a folder holding
`request.json`. It writes the trace there (see `wire`) and `result.json` last, then ends
with `os._exit`: no interpreter shutdown, so a daemon thread still inside torch cannot abort
it, and nothing the file left behind runs after the result is written. The file's `atexit`
handlers run before that, as under `python FILE.py`, and under the same clock.
"""

from __future__ import annotations

import atexit
import ctypes
import json
import os
import signal
import sys
import threading
from contextlib import suppress
from pathlib import Path
from typing import Any, NoReturn

REQUEST = "request.json"
RESULT = "result.json"
STARTED = "started"  # written when the file starts: --timeout counts the file's time, not attn-tui's start-up
OVER_BUDGET = 3  # the exit status when the recording passed --max-memory while the file ran
_exit = os._exit  # the real one: while the file runs, os._exit is its own (see script._exit_as_sys_exit)


def _die_with_parent() -> None:
    """If attn-tui itself is killed, this process is killed too (Linux); elsewhere the group kill covers it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent died before the line above
            os._exit(1)
    except (OSError, AttributeError):
        pass


def write_result(folder: Path, result: dict[str, Any]) -> None:
    """`result.json`, whole or not at all: a child stopped mid-write leaves no half result to misread."""
    partial = folder / (RESULT + ".part")
    partial.write_text(json.dumps(result), encoding="utf-8")
    os.replace(partial, folder / RESULT)


def _leave(code: int) -> NoReturn:
    for stream in (sys.stdout, sys.stderr):
        with suppress(Exception):  # a stream the file closed or replaced
            stream.flush()
    _exit(code)


def _error(folder: Path, message: object) -> None:
    from attn_tui.sources.recorder.wire import encode_message

    write_result(folder, {"ok": False, "error": encode_message(message)})


def main(folder_name: str) -> NoReturn:
    """Run the request in `folder_name` and end; whatever happens, even Ctrl-C while torch loads, is one line."""
    folder = Path(folder_name)
    debug = False
    try:
        _die_with_parent()
        request = json.loads((folder / REQUEST).read_text(encoding="utf-8"))
        debug = bool(request.get("debug"))
        _run(folder, request)
    except BaseException as exc:
        from attn_tui.errors import AttnError, describe

        if debug and not isinstance(exc, AttnError):  # the recorder's own failure: its traceback under --debug
            import traceback

            traceback.print_exc()
        _error(folder, exc.message if isinstance(exc, AttnError) else describe(exc))
        _leave(2)
    _leave(0)


def _run(folder: Path, request: dict[str, Any]) -> None:
    if "" in sys.path:
        sys.path.remove("")  # `python FILE.py` has the file's folder on the path, not the current one
    from attn_tui.sources.recorder.capture import Recorder  # noqa: F401  (torch, loaded before the clock starts)
    from attn_tui.sources.recorder.script import run_here

    def stop(kept: int, budget: int) -> None:
        from attn_tui.sources.recorder.held import over_budget

        _error(folder, over_budget(Path(request["script"]).name, kept, budget).message)
        _leave(OVER_BUDGET)

    before = set(threading.enumerate())
    (folder / STARTED).touch()
    try:
        trace = run_here(request["script"], request["args"], request["max_calls"], request["budget"], stop)
    finally:
        atexit._run_exitfuncs()  # the file's own handlers, as Python would run them at its end
    left = [t for t in threading.enumerate() if t not in before and t.is_alive() and not t.daemon]
    from attn_tui.sources.recorder.wire import write_trace

    write_trace(trace, folder)
    write_result(folder, {"ok": True, "threads": len(left)})


if __name__ == "__main__":
    main(sys.argv[1])
