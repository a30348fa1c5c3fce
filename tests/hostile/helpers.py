"""Run `attn-tui` as a hostile user would: in a child process, under a memory ceiling and a time limit."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

MEMORY_CEILING = 3 * 1024**3  # address space of the child; torch alone maps about 0.7 GB
TIME_LIMIT = 60.0  # seconds; a hang fails the test instead of the suite


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
    return Outcome(result.returncode, result.stdout.decode("utf-8", "replace"),
                   result.stderr.decode("utf-8", "replace"))
