"""Errors the user can cause and fix; every one carries a message fit to show as is."""

from __future__ import annotations

from attn_tui.i18n import Msg


class AttnError(Exception):
    """Base of every error caused by input or settings (never by a bug).

    The CLI turns these into one line on stderr and exit code 2; the app shows them
    inline and keeps what the user typed.
    """


class InputError(AttnError):
    """A typed matrix, sentence or file that cannot be read; points at line and column."""

    def __init__(self, message: str | Msg, line: int | None = None, column: int | None = None,
                 source: str | None = None) -> None:
        self.reason = message
        self.line = line
        self.column = column
        self.source = source
        where = []
        if source:
            where.append(source)
        if line is not None:
            where.append(f"line {line}" + (f", column {column}" if column is not None else ""))
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class ShapeError(InputError):
    """Matrices that parse but do not fit together; the message names both shapes."""


class ConfigError(AttnError):
    """A setting that makes no sense for the inputs (heads not dividing dim, unknown stage…)."""


class DeviceError(AttnError):
    """A device or dtype that this machine or build cannot provide."""


def describe(exc: BaseException) -> str:
    """An unexpected exception as the first line of what it says, prefixed by what we were doing."""
    if isinstance(exc, MemoryError):
        return "out of memory: lower the sizes (or set --max-memory lower so such requests are refused first)"
    if isinstance(exc, RecursionError):
        return "the input is nested too deeply"
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}" + (f": {exc.filename!r}"[:80] if exc.filename else "")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"could not compute: {first}"
