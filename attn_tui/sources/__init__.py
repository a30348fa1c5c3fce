"""Every source of attention behind one door: `run(ask) -> Shown` (see door.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_tui.ask.settings import Ask
    from attn_tui.trace.shown import Shown


def run(ask: Ask, max_memory: int | None = None, cpu_fallback: bool = False) -> Shown:
    """Any ask to what is shown; the import of the sources (and torch) waits for the first call."""
    from attn_tui.sources.door import run as door_run

    return door_run(ask, max_memory, cpu_fallback)
