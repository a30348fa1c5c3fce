"""Running one request for the app: the engine call, the CUDA fallback, and errors as messages.

Called from a worker thread; returns a message for the app to handle, never touches a widget.
"""

from __future__ import annotations

import time
from dataclasses import replace

from attn_tui.core.settings import Request
from attn_tui.tui.messages import ComputeFailed, TraceReady


def compute_message(request: Request, generation: int, max_memory: int | None = None) -> TraceReady | ComputeFailed:
    """Compute `request`; a CUDA request without CUDA runs on the CPU with a notice saying so."""
    from attn_tui.core.engine import compute  # imports torch: only ever called from a worker
    from attn_tui.core.errors import AttnError, DeviceError, describe

    start = time.perf_counter()
    notice = None
    try:
        try:
            trace = compute(request, max_memory)
        except DeviceError as exc:
            if not request.settings.device.startswith("cuda"):
                raise
            notice = f"{exc} — computing on the CPU instead"
            trace = compute(replace(request, settings=replace(request.settings, device="cpu")), max_memory)
    except AttnError as exc:
        return ComputeFailed(generation, request, str(exc))
    except Exception as exc:  # noqa: BLE001 — torch's own refusals, reported, never a crash
        return ComputeFailed(generation, request, describe(exc))
    return TraceReady(generation, request, trace, time.perf_counter() - start, notice)
