"""The one door from an ask to what is shown: the app, the CLI, the API and the session all come through it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

from attn_tui.ask.checks import check_fields
from attn_tui.ask.settings import Ask
from attn_tui.errors import DeviceError
from attn_tui.i18n import Msg
from attn_tui.sources.progress import OnProgress, listening
from attn_tui.sources.registry import source_for
from attn_tui.trace.meta import TransformerRun
from attn_tui.trace.shown import Shown
from attn_tui.trace.stage import Trace

OnStep = Callable[[Shown], None]


@runtime_checkable
class GrowingSource(Protocol):
    """A source that can hand out its trace as each step is made (a decoder, step by step)."""

    def trace_growing(self, ask: Ask, max_memory: int | None, on_step: Callable[[Trace], None]) -> Trace: ...


def run(ask: Ask, max_memory: int | None = None, cpu_fallback: bool = False, on_step: OnStep | None = None,
        on_progress: OnProgress | None = None, model_statistics: bool = True) -> Shown:
    """Compute `ask` through its source, with a whole model's statistics where `model_statistics` asks for them.

    The statistics read every head of every layer (a model traces its layers when they are first read): a
    caller that reads only the stages it names (one layer and head, printed or exported) leaves them out.

    `cpu_fallback`: where CUDA was asked for and cannot be had, compute on the CPU and say so in
    `notice` (the app, where a result is worth more than the exact device); the CLI and the API refuse.
    `on_step`: a source that makes its trace step by step (the date decoders) hands each step's snapshot
    to it as soon as it is made, as a Shown of the trace so far; the finished one is returned as always.
    `on_progress`: told each phase of a long load (sources/progress.py), for a progress bar.

    Imports torch: the app calls it only from a worker thread.
    """
    with listening(on_progress):
        return _run(ask, max_memory, cpu_fallback, on_step, model_statistics)


def _run(ask: Ask, max_memory: int | None, cpu_fallback: bool, on_step: OnStep | None, model_statistics: bool
         ) -> Shown:
    notice: Msg | None = None
    try:
        trace = _trace(ask, max_memory, on_step)
    except DeviceError as exc:
        if not cpu_fallback or not ask.device.startswith("cuda"):
            raise
        notice = Msg("{reason} — computing on the CPU instead", reason=exc.message)
        trace = _trace(ask.on_device("cpu"), max_memory, on_step)  # the ask shown stays as asked: CUDA next time
    stats = None
    # a StreamingLLM writing's rows read different keys each step: they do not stack into one matrix
    if model_statistics and isinstance(trace.meta, TransformerRun) and not getattr(trace.meta, "cache", ""):
        from attn_tui.attention.summary import model_stats

        stats = model_stats(trace)
    return Shown(ask, trace, stats, notice)


def _trace(ask: Ask, max_memory: int | None, on_step: OnStep | None = None) -> Trace:
    if ask.kind == "model":
        check_fields(ask, "model")
    source = source_for(ask)
    if on_step is not None and isinstance(source, GrowingSource):
        def publish(trace: Trace) -> None:
            on_step(Shown(ask, trace))

        return source.trace_growing(ask, max_memory, publish)
    return source.trace(ask, max_memory)

