"""What is on show: the ask that produced a trace, the trace, and a whole model's statistics."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg

if TYPE_CHECKING:
    from attn_tui.ask.settings import Ask
    from attn_tui.trace.model_stats import ModelStats
    from attn_tui.trace.stage import Trace


@dataclass(frozen=True, eq=False)
class Shown:
    """One finished computation, as every front end keeps it until a newer one succeeds."""

    ask: Ask
    trace: Trace
    stats: ModelStats | None = None  # a whole transformer's heads and rollout, for its grid and summary
    notice: Msg | None = None  # e.g. CUDA was asked for but the CPU was used
