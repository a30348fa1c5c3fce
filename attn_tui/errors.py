"""Errors the user can cause and fix; every one carries a message fit to show as is.

Messages are `Msg`s where they can be, so an error raised in the worker or deep in the
core is read in the language of whoever shows it (the CLI's, or the app's after `t`).
"""

from __future__ import annotations

from attn_tui.i18n import Msg


class AttnError(Exception):
    """Base of every error caused by input or settings (never by a bug).

    The CLI turns these into one line on stderr and exit code 2; the app shows them
    inline and keeps what the user typed.
    """

    def __init__(self, message: str | Msg = "") -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return str(self.message)


class InputError(AttnError):
    """A typed matrix, sentence or file that cannot be read; points at line and column."""

    def __init__(self, message: str | Msg, line: int | None = None, column: int | None = None,
                 source: str | Msg | None = None) -> None:
        super().__init__(message)
        self.reason = message
        self.line = line
        self.column = column
        self.source = source

    def __str__(self) -> str:
        where: list[str] = [str(self.source)] if self.source else []
        if self.line is not None and self.column is not None:
            where.append(str(Msg("line {line}, column {column}", line=self.line, column=self.column)))
        elif self.line is not None:
            where.append(str(Msg("line {line}", line=self.line)))
        return f"{', '.join(where)}: {self.reason}" if where else str(self.reason)


class ShapeError(InputError):
    """Matrices that parse but do not fit together; the message names both shapes."""


class ConfigError(AttnError):
    """A setting that makes no sense for the inputs (heads not dividing dim, unknown stage…)."""


class DeviceError(AttnError):
    """A device or dtype that this machine or build cannot provide."""


def describe(exc: BaseException) -> str | Msg:
    """An unexpected exception as the first line of what it says, prefixed by what we were doing."""
    if isinstance(exc, MemoryError):
        return Msg("out of memory: lower the sizes (or set --max-memory lower so such requests are refused first)")
    if isinstance(exc, RecursionError):
        return Msg("the input is nested too deeply")
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename!r}"[:80] if exc.filename else "")  # the system's own words
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return Msg("could not compute: {reason}", reason=first)
