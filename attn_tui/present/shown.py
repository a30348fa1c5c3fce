"""What is on show: the ask that produced a trace, the trace, and its whole-model summary."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg

if TYPE_CHECKING:
    from attn_tui.present.model_view import ModelSummary
    from attn_tui.sources.base import Ask
    from attn_tui.trace.stage import Trace


@dataclass(frozen=True, eq=False)
class Shown:
    """One finished computation, as the app keeps it until a newer one succeeds."""

    ask: Ask
    trace: Trace
    summary: ModelSummary | None = None  # a transformer's layer × head grid and rollout
    notice: Msg | None = None  # e.g. CUDA was asked for but the CPU was used


def run_ask(ask: Ask, max_memory: int | None = None) -> Shown:
    """Compute an ask through its source (and a transformer's summary), falling back from CUDA to the CPU.

    Imports torch: only ever called from a worker thread.
    """
    from dataclasses import replace

    from attn_tui.ask.settings import Request
    from attn_tui.errors import DeviceError
    from attn_tui.present.model_view import summarise
    from attn_tui.sources.registry import trace_for
    from attn_tui.trace.meta import TransformerRun

    notice: Msg | None = None
    try:
        trace = trace_for(ask, max_memory)
    except DeviceError as exc:
        device = ask.settings.device if isinstance(ask, Request) else ask.device
        if not device.startswith("cuda"):
            raise
        notice = Msg("{reason} — computing on the CPU instead", reason=exc.message)
        cpu = (replace(ask, settings=replace(ask.settings, device="cpu")) if isinstance(ask, Request)
               else replace(ask, device="cpu"))
        trace = trace_for(cpu, max_memory)
    summary = summarise(trace) if isinstance(trace.meta, TransformerRun) else None
    return Shown(ask, trace, summary, notice)
