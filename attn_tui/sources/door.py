"""The one door from an ask to what is shown: the app, the CLI, the API and the session all come through it."""

from __future__ import annotations

from attn_tui.ask.checks import check_fields
from attn_tui.ask.settings import Ask
from attn_tui.errors import DeviceError
from attn_tui.i18n import Msg
from attn_tui.sources.registry import source_for
from attn_tui.trace.meta import TransformerRun
from attn_tui.trace.shown import Shown
from attn_tui.trace.stage import Trace


def run(ask: Ask, max_memory: int | None = None, cpu_fallback: bool = False) -> Shown:
    """Compute `ask` through its source, with a whole model's statistics.

    `cpu_fallback`: where CUDA was asked for and cannot be had, compute on the CPU and say so in
    `notice` (the app, where a result is worth more than the exact device); the CLI and the API refuse.

    Imports torch: the app calls it only from a worker thread.
    """
    notice: Msg | None = None
    try:
        trace = _trace(ask, max_memory)
    except DeviceError as exc:
        if not cpu_fallback or not ask.device.startswith("cuda"):
            raise
        notice = Msg("{reason} — computing on the CPU instead", reason=exc.message)
        ask = ask.on_device("cpu")
        trace = _trace(ask, max_memory)
    stats = None
    if isinstance(trace.meta, TransformerRun):
        from attn_tui.attention.summary import model_stats

        stats = model_stats(trace)
    return Shown(ask, trace, stats, notice)


def _trace(ask: Ask, max_memory: int | None) -> Trace:
    if ask.kind == "model":
        check_fields(ask, "model")
    return source_for(ask).trace(ask, max_memory)

