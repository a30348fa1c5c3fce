"""Every source of attention behind one door: `run(ask) -> Shown` (see door.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable

    from attn_tui.ask.settings import Ask
    from attn_tui.sources.progress import OnProgress
    from attn_tui.trace.shown import Shown


def run(ask: Ask, max_memory: int | None = None, cpu_fallback: bool = False,
        on_step: Callable[[Shown], None] | None = None, on_progress: OnProgress | None = None,
        model_statistics: bool = True) -> Shown:
    """Any ask to what is shown; the import of the sources (and torch) waits for the first call.

    `on_step`: where the source makes its trace step by step, each step's snapshot as soon as it exists;
    `on_progress`: each phase of a long load (sources/progress.py); `model_statistics`: False where only the
    trace's stages are read (no whole-model statistics)."""
    from attn_tui.sources.door import run as door_run

    return door_run(ask, max_memory, cpu_fallback, on_step, on_progress, model_statistics)
