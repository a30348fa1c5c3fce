"""The one protocol every source of attention follows: what it was asked for in, a Trace out."""


from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from attn_tui.ask.settings import Ask

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace

class Source(Protocol):
    """Turns an ask into a Trace; `handles` says whether this source is the one for it."""

    def handles(self, ask: Ask) -> bool: ...

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace: ...
