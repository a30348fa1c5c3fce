"""The words under a load's bar: its phase, how long it has taken and, at its pace so far, what is left (the bar
beside them shows how far)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from attn_tui.i18n import _

if TYPE_CHECKING:
    from attn_tui.i18n import Msg
    from attn_tui.sources.progress import Progress

ESTIMATE_FROM = 0.05  # a phase this far in has a pace worth extrapolating
SAY_TIME_AFTER = 3.0  # a phase that takes longer says how long it has taken (and, known how far, what is left)


def seconds(value: float) -> str:
    """'42 s', '3 min 05 s': a duration as a person reads it."""
    whole = round(value)
    if whole < 60:
        return _("{s} s").format(s=whole)
    return _("{m} min {s:02d} s").format(m=whole // 60, s=whole % 60)


def phase_line(progress: Progress, elapsed: float) -> str:
    """'converting smollm2 (once): de-quantising its tensors · 31 s, about 43 s left'."""
    parts = [str(progress.what)]
    fraction = progress.fraction
    if elapsed >= SAY_TIME_AFTER:
        if fraction is not None and ESTIMATE_FROM <= fraction < 1:
            left = elapsed * (1 - fraction) / fraction
            parts.append(_("{elapsed}, about {left} left").format(elapsed=seconds(elapsed), left=seconds(left)))
        else:
            parts.append(_("{elapsed} so far").format(elapsed=seconds(elapsed)))
    return " · ".join(parts)


class PhaseClock:
    """When the phase on show began: a new phase starts the clock again, and so does a new load (`reset`)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.phase: Msg | None = None  # compared in English: `t` during a load does not restart it
        self.since = 0.0

    def reset(self) -> None:
        self.phase = None

    def line(self, progress: Progress) -> str:
        now = self.clock()
        if progress.what != self.phase:
            self.phase, self.since = progress.what, now
        return phase_line(progress, now - self.since)
