"""Llama-family decoders (SmolLM2, or any Llama-style folder): traced by the `llama` family adapter.

Kept as a name for the callers that trace a Llama run directly; the layer itself is read by
`families/llama.py` and recorded by the shared tracer, with the stages of the `rope` and
`gqa` variants.
"""

from __future__ import annotations

from attn_tui.sources.families.llama import FAMILY, rope_base
from attn_tui.sources.families.tracer import trace_run as traced
from attn_tui.sources.model_run import ModelRun
from attn_tui.trace.stage import Trace

__all__ = ["rope_base", "trace_run"]


def trace_run(run_: ModelRun, layer: int, head: int) -> Trace:
    """The run as one Trace; `layer` is computed now (every head of it), the others when asked for."""
    return traced(run_, layer, head, FAMILY)
