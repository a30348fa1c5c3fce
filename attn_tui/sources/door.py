"""The one door from an ask to what is shown: the app, the CLI, the API and the session all come through it."""

from __future__ import annotations

from dataclasses import replace

from attn_tui.ask.checks import check_fields
from attn_tui.ask.settings import Ask, ModelInput, Request
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
        if not cpu_fallback or not _device(ask).startswith("cuda"):
            raise
        notice = Msg("{reason} — computing on the CPU instead", reason=exc.message)
        ask = _on_cpu(ask)
        trace = _trace(ask, max_memory)
    stats = None
    if isinstance(trace.meta, TransformerRun):
        from attn_tui.attention.summary import model_stats

        stats = model_stats(trace)
    return Shown(ask, trace, stats, notice)


def _trace(ask: Ask, max_memory: int | None) -> Trace:
    if isinstance(ask, ModelInput):
        check_fields(ask, "model")
    return source_for(ask).trace(ask, max_memory)


def _device(ask: Ask) -> str:
    return ask.settings.device if isinstance(ask, Request) else ask.device


def _on_cpu(ask: Ask) -> Ask:
    if isinstance(ask, Request):
        return replace(ask, settings=replace(ask.settings, device="cpu"))
    return replace(ask, device="cpu")
