"""`attn-tui trace FILE.py`: the user's file runs in a child process that attn-tui holds by the clock.

The file may ignore or re-arm SIGALRM, cancel timers, catch every exception, hang in an
`atexit` handler or start processes of its own: none of that reaches this process. The
child (see `child`) runs in a session of its own, with no controlling terminal: `/dev/tty`
cannot be opened there, so nothing the file writes reaches the terminal except through
attn-tui, which shows its output with control characters made visible. Its stdin is what
attn-tui's own stdin gives, forwarded by the command line (so `input()` still reads what
the person types), and nothing in the app, which owns the keyboard. When `--timeout` runs
out, or the child ends, its whole group is killed, so nothing the file started is left
behind. The trace comes back as plain files (see `wire`), never as pickles.
"""

from __future__ import annotations

import codecs
import ctypes
import json
import os
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from attn_tui.i18n import Msg
from attn_tui.io.controls import printable_lines
from attn_tui.sources.recorder.script import ScriptError, check_script

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace

START_UP = 120.0  # seconds attn-tui's own start in the child may take (torch's import on a busy machine)
ADOPTION = 3.0  # seconds to wait for the file's processes to end once their group is killed
DRAIN = 0.5  # seconds to read what is left in the pipes once the child is gone (a process outside the group
# may still hold them open)


@dataclass(frozen=True)
class ScriptRun:
    """What the file's run handed back: the trace, and how many threads it left running when it ended."""

    trace: Trace
    threads: int


class _Passage:
    """One of the child's pipes, decoded and made visible, written to one of attn-tui's streams."""

    def __init__(self, target: IO[str]) -> None:
        self.target = target
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def write(self, data: bytes, final: bool = False) -> None:
        text = printable_lines(self.decoder.decode(data, final))
        if text:
            self.target.write(text)
            self.target.flush()
            _mid_line[id(self.target)] = not text.endswith("\n")


_mid_line: dict[int, bool] = {}  # by stream: the file's output there stopped mid-line (`input("name: ")`)


def _end_lines(*streams: IO[str]) -> None:
    """The line that reports the run's end starts a line of its own."""
    for stream in dict.fromkeys(streams):
        if _mid_line.pop(id(stream), False):
            with suppress(Exception):
                stream.write("\n")
                stream.flush()


@contextmanager
def _ended_by_signals() -> Iterator[None]:
    """SIGTERM or SIGHUP to attn-tui ends it as Ctrl-C would, through the `finally` that kills the file's group
    (by default they would end attn-tui at once and leave the file running)."""
    def leave(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, leave) for sig in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _subreaper(on: bool) -> bool:
    """Linux: while the file runs, what it starts and that leaves its process group (`setsid`, a daemon) comes
    back to attn-tui when its parent ends, instead of to init, so that it can be ended too."""
    try:
        return int(ctypes.CDLL(None, use_errno=True).prctl(36, int(on), 0, 0, 0)) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def _processes() -> Iterator[tuple[int, int, int, str]]:
    """(pid, parent, group, state) of every process (read from /proc; nothing where there is none)."""
    with suppress(OSError):
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with suppress(OSError, IndexError, ValueError):
                    fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                    yield int(entry), int(fields[1]), int(fields[2]), fields[0]


def _children() -> set[int]:
    me = os.getpid()
    return {pid for pid, parent, _, _ in _processes() if parent == me}


def _end_adopted(before: set[int], group: int) -> None:
    """End what the file started that left its group and came back to attn-tui (see `_subreaper`), generation
    by generation, until nothing of the group or of its escapees is left (or ADOPTION seconds pass)."""
    me, end = os.getpid(), time.monotonic() + ADOPTION
    while time.monotonic() < end:
        adopted = living = 0
        for pid, parent, pgrp, state in _processes():
            if parent == me and pid not in before:
                adopted += 1
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
                with suppress(ChildProcessError):
                    os.waitpid(pid, 0)
            elif pgrp == group and state not in ("Z", "X"):
                living += 1
        if not adopted and not living:
            return
        time.sleep(0.02)


def _kill_group(group: int) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(group, signal.SIGKILL)


def _stdin() -> tuple[int, int | None]:
    """What the child reads as stdin, and the terminal to forward into it (None: none).

    The command line's terminal is passed on through a pipe, never handed over (the file would hold the terminal
    then); a pipe or a file is handed over as it is; the app, which owns the keyboard, and a process with no
    usable stdin give the file nothing to read."""
    if threading.current_thread() is not threading.main_thread() or sys.stdin is None:
        return subprocess.DEVNULL, None
    try:
        fd = sys.stdin.fileno()
        terminal = os.isatty(fd)
    except (OSError, ValueError, AttributeError):
        return subprocess.DEVNULL, None
    return (subprocess.PIPE, fd) if terminal else (fd, None)


def _start(folder: Path, stdin: int) -> subprocess.Popen[bytes]:
    """The child, in a session of its own: no controlling terminal, and a group `_kill_group` ends whole."""
    root = str(Path(__file__).resolve().parents[3])  # the folder attn_tui is imported from, for the child too
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import attn_tui.sources.recorder.child as c; "
            "sys.path.remove(sys.argv[1]); c.main(sys.argv[2])")
    return subprocess.Popen([sys.executable, "-u", "-c", code, root, str(folder)],
                            stdin=stdin, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, close_fds=True, start_new_session=True)


class _Forward:
    """attn-tui's terminal passed on to the child's stdin as it comes (a line at a time): what is read is held until
    the child's pipe takes it, and nothing more is read meanwhile, so a file that never reads costs one pipe's
    worth; the end of input (Ctrl-D) closes the child's."""

    def __init__(self, source: int, child_stdin: IO[bytes], selector: selectors.BaseSelector) -> None:
        self.source, self.sink, self.selector = source, child_stdin, selector
        self.pending = b""
        os.set_blocking(child_stdin.fileno(), False)
        selector.register(source, selectors.EVENT_READ, self)

    def ready(self, fd: int) -> None:
        if fd == self.source:
            try:
                data = os.read(self.source, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            self.selector.unregister(self.source)
            if not data:
                self.sink.close()
                return
            self.pending = data
            self.selector.register(self.sink, selectors.EVENT_WRITE, self)
            return
        try:
            written = os.write(self.sink.fileno(), self.pending)
        except BlockingIOError:
            return
        except OSError:  # the file closed its stdin: what is typed from now on is attn-tui's alone
            self.selector.unregister(self.sink)
            return
        self.pending = self.pending[written:]
        if not self.pending:
            self.selector.unregister(self.sink)
            self.selector.register(self.source, selectors.EVENT_READ, self)

    def stop(self) -> None:
        """The child has ended: what is typed from now on is attn-tui's again."""
        for fd in (self.source, self.sink):
            with suppress(KeyError, ValueError):
                self.selector.unregister(fd)


def _pump(child: subprocess.Popen[bytes], out: _Passage, err: _Passage, started: Path, timeout: int,
          terminal: int | None) -> bool:
    """Pass the child's output on (and the `terminal`'s input in) until it ends; False when `timeout` seconds (0:
    none) passed since the file `started`, or the child took more than START_UP to get there."""
    selector = selectors.DefaultSelector()
    assert child.stdout is not None and child.stderr is not None
    for pipe, passage in ((child.stdout, out), (child.stderr, err)):
        os.set_blocking(pipe.fileno(), False)
        selector.register(pipe, selectors.EVENT_READ, passage)
    forward = None if terminal is None or child.stdin is None else _Forward(terminal, child.stdin, selector)
    deadline: float | None = time.monotonic() + START_UP + timeout if timeout else None
    running = False
    try:
        while child.poll() is None:
            if timeout and not running and started.exists():
                running, deadline = True, time.monotonic() + timeout
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return False
            if not selector.get_map():
                with suppress(subprocess.TimeoutExpired):
                    child.wait(timeout=0.1 if left is None else min(0.1, max(left, 0.0)))
                continue
            for key, _ in selector.select(0.1 if left is None else min(0.1, max(left, 0.0))):
                _read(key, selector)
        if forward is not None:
            forward.stop()
        end = time.monotonic() + DRAIN
        while selector.get_map() and time.monotonic() < end:
            for key, _ in selector.select(max(0.0, end - time.monotonic())):
                _read(key, selector)
        return True
    finally:
        selector.close()


def _read(key: selectors.SelectorKey, selector: selectors.BaseSelector) -> None:
    if isinstance(key.data, _Forward):
        key.data.ready(key.fd)
        return
    try:
        data = os.read(key.fd, 65536)
    except BlockingIOError:
        return
    passage: _Passage = key.data
    if data:
        passage.write(data)
    else:
        passage.write(b"", final=True)
        selector.unregister(key.fileobj)


def _preload() -> None:
    """torch and the trace's types, loaded here while the child loads its own and runs the file: on a machine with
    a core to spare, reading the trace back then costs no import."""
    with suppress(Exception):
        import attn_tui.sources.recorder.wire  # noqa: F401


def _request(folder: Path, script: Path, args: Sequence[str], max_calls: int, budget: int | None,
             debug: bool) -> None:
    request = {"script": str(script), "args": list(args), "max_calls": max_calls, "budget": budget, "debug": debug}
    (folder / "request.json").write_text(json.dumps(request), encoding="utf-8")


def run_script(path: str | Path, args: Sequence[str] = (), max_calls: int = 64, quiet_stdout: bool = False,
               timeout: int = 0, budget: int | None = None, debug: bool = False) -> ScriptRun:
    """Run `path` with `args` in a child process under the recorder; the trace of the attention it computed.

    `timeout` seconds (0: none) bound the run, `atexit` handlers and processes the file started
    included; `budget` bytes bound what the recording holds. Either way out is one line (ScriptError);
    `debug` adds the traceback of a failure of the recorder itself.
    The file's stdout goes to stderr when `quiet_stdout` (the table or JSON owns stdout).
    """
    from attn_tui.sources.recorder.child import STARTED

    script = check_script(path)
    out = _Passage(sys.stderr if quiet_stdout else sys.stdout)
    err = _Passage(sys.stderr)
    with tempfile.TemporaryDirectory(prefix="attn-tui-trace-") as name:
        folder = Path(name)
        _request(folder, script, args, max_calls, budget, debug)
        before = _children()
        adopting = _subreaper(True)
        stdin, terminal = _stdin()
        try:
            child = _start(folder, stdin)
        except BaseException:
            if adopting:
                _subreaper(False)
            raise
        preload = threading.Thread(target=_preload, name="attn-tui-preload", daemon=True)
        preload.start()
        try:
            with _ended_by_signals():
                finished = _pump(child, out, err, folder / STARTED, timeout, terminal)
        finally:
            _kill_group(child.pid)  # whatever the file started goes with it
            with suppress(Exception):
                child.kill()
            child.wait()
            if adopting:
                _end_adopted(before, child.pid)
                _subreaper(False)
            for pipe in (child.stdin, child.stdout, child.stderr):
                if pipe is not None:
                    pipe.close()
            _end_lines(out.target, err.target)
            preload.join()  # never left importing torch while Python shuts down
        if not finished:
            raise ScriptError(Msg("{script} ran for {seconds} s and was stopped (--timeout SECONDS sets the limit, 0 "
                                  "none)", script=script.name, seconds=timeout))
        return _result(folder, script, child.returncode)


def _result(folder: Path, script: Path, code: int) -> ScriptRun:
    from attn_tui.sources.recorder.child import RESULT
    from attn_tui.sources.recorder.wire import WireError, decode_message, read_trace

    try:
        result: dict[str, Any] = json.loads((folder / RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        if code < 0:
            with suppress(ValueError):
                raise ScriptError(Msg("{script} was ended by {signal}", script=script.name,
                                      signal=signal.Signals(-code).name)) from None
        raise ScriptError(Msg("{script} ended (status {code}) without handing its recording back",
                              script=script.name, code=code)) from None
    try:
        if not result.get("ok"):
            raise ScriptError(decode_message(result.get("error")))
        return ScriptRun(read_trace(folder), int(result.get("threads", 0)))
    except WireError as exc:
        raise ScriptError(Msg("{script}: the recording could not be read back ({reason})", script=script.name,
                              reason=str(exc))) from None
