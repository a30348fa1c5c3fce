"""Running a real or trained model for the app: trace, whole-model summary, errors as messages.

Called from a worker thread; loading a model the first time takes seconds, so it never
runs on the UI thread. The registry caches loaded models and forward passes.
"""

from __future__ import annotations

import time
from functools import lru_cache

from attn_tui.core.settings import ModelInput, Request
from attn_tui.tui.messages import ComputeFailed, TraceReady


@lru_cache(maxsize=8)
def _summary(name: str, text: str, pad_to: int | None, device: str, max_memory: int | None):
    from attn_tui.models.registry import model_run
    from attn_tui.tui.model_views import summarise

    return summarise(model_run(name, text, pad_to, device, max_memory))


def model_message(model: ModelInput, request: Request, generation: int,
                  max_memory: int | None = None) -> TraceReady | ComputeFailed:
    """Trace the model's chosen head (or decode), plus the layer × head summary of a transformer."""
    from attn_tui.core.errors import AttnError, describe
    from attn_tui.models.registry import is_seq2seq, trace_for

    start = time.perf_counter()
    device = request.settings.device
    try:
        trace = trace_for(model, device, max_memory)
        summary = (None if is_seq2seq(model.name) else
                   _summary(model.name, model.text, model.pad_to, device, max_memory))
    except AttnError as exc:
        return ComputeFailed(generation, request, str(exc), model)
    except Exception as exc:  # noqa: BLE001 — torch's or transformers' refusals, never a crash
        return ComputeFailed(generation, request, describe(exc), model)
    return TraceReady(generation, request, trace, time.perf_counter() - start, None, model, summary)
