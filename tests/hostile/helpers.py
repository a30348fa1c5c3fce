"""Run `attn-tui` as a hostile user would: in a child process, under a memory ceiling and a time limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from attn_tui.io.controls import UNSAFE
from tests.limits import limit

MEMORY_CEILING = 3 * 1024**3  # address space of the child; torch alone maps about 0.7 GB
TIME_LIMIT = limit(60.0)  # seconds; a hang fails the test instead of the suite
LINE_ENDS = str.maketrans("", "", "\t\r\n")  # what may act on a terminal from any output: tabs and line ends


@dataclass
class Outcome:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.err.strip().splitlines()

    def refused(self, fragment: str = "") -> bool:
        """Exit 2, exactly one short line on stderr, no traceback, and the fragment in it."""
        return (self.code == 2 and len(self.lines) == 1 and len(self.lines[0]) <= 250
                and "Traceback" not in self.err and fragment in self.err)


def _limit(ceiling: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (ceiling, ceiling))
    return apply


def attn_tui(*argv: str | bytes, stdin: bytes = b"", ceiling: int = MEMORY_CEILING, cwd: Path | None = None,
             env: dict[str, str] | None = None) -> Outcome:
    """`attn-tui ARGV…` in a child with `stdin` fed, under the memory ceiling; the time limit fails the test."""
    command = [sys.executable, "-m", "attn_tui", *argv]
    result = subprocess.run(command, input=stdin, capture_output=True, timeout=TIME_LIMIT, preexec_fn=_limit(ceiling),
                            cwd=cwd, env={**os.environ, **(env or {})})
    outcome = Outcome(result.returncode, result.stdout.decode("utf-8", "replace"),
                      result.stderr.decode("utf-8", "replace"))
    for stream in (outcome.out, outcome.err):  # on pipes Rich adds no escape: any control came from the input
        text = stream.translate(LINE_ENDS)
        raw = UNSAFE.search(text)
        assert raw is None, f"a raw {raw.group(0)!r} reached a stream: {text[max(0, raw.start() - 60):raw.end() + 9]!r}"
    return outcome


class AppInPty:
    """`attn-tui ARGV…` in a pseudo-terminal of its own, as a person runs it; the screen read back through pyte.

    The child is the session leader of the pty, so closing the parent's end hangs it up as closing a
    terminal window does (SIGHUP)."""

    def __init__(self, *argv: str, env: dict[str, str] | None = None, size: tuple[int, int] = (120, 40)) -> None:
        import fcntl
        import pty
        import struct
        import termios

        import pyte

        self.screen = pyte.Screen(*size)
        self._stream = pyte.ByteStream(self.screen)
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: nothing but exec
            os.execve(sys.executable, [sys.executable, "-m", "attn_tui", *argv],
                      {**os.environ, "TERM": "xterm-256color", **(env or {})})
        fcntl.ioctl(self.fd, termios.TIOCSWINSZ, struct.pack("HHHH", size[1], size[0], 0, 0))
        self.open = True

    def pump(self, seconds: float) -> None:
        """Read what the app draws for `seconds` (a pty whose reader stops would block the app's writes)."""
        import select
        import time

        end = time.monotonic() + seconds
        while self.open and time.monotonic() < end:
            ready, _, _ = select.select([self.fd], [], [], 0.05)
            if ready:
                try:
                    data = os.read(self.fd, 65536)
                except OSError:  # EIO: the app has gone
                    return
                if not data:
                    return
                self._stream.feed(data)

    @property
    def text(self) -> str:
        return "\n".join(self.screen.display)

    def wait_for(self, fragment: str, seconds: float = 60.0) -> None:
        import time

        end = time.monotonic() + limit(seconds)
        while fragment not in self.text:
            assert time.monotonic() < end, f"{fragment!r} never appeared:\n{self.text}"
            self.pump(0.1)

    def type(self, keys: str, pause: float = 0.2) -> None:
        os.write(self.fd, keys.encode("utf-8"))
        self.pump(pause)

    def close(self) -> None:
        if self.open:
            os.close(self.fd)
            self.open = False

    def exit_code(self, seconds: float = 30.0) -> int:
        """Wait for the app to end (reading its screen meanwhile); its exit code, or -signal if a signal killed it."""
        import signal
        import time

        end = time.monotonic() + limit(seconds)
        while time.monotonic() < end:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.close()
                return os.waitstatus_to_exitcode(status)
            if self.open:
                self.pump(0.05)
            else:
                time.sleep(0.05)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        self.close()
        raise AssertionError("the app did not end")
