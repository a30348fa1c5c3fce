"""Every source of attention behind one door: an ask (a variant request or a model input) in, a Trace out.

A new kind of source is one module with a class that follows `base.Source`, and one
line in SOURCES. Loaded models and forward passes are cached by the sources themselves,
so switching layer, head or sentence in the app never loads weights twice.
"""

from __future__ import annotations

from attn_tui.ask.checks import check_fields
from attn_tui.ask.settings import ModelInput
from attn_tui.sources.base import Ask, Source
from attn_tui.sources.date_model import DateModelSource
from attn_tui.sources.gguf import GgufSource
from attn_tui.sources.transformer import TransformerSource
from attn_tui.sources.variants import VariantSource
from attn_tui.trace.stage import Trace

SOURCES: tuple[Source, ...] = (VariantSource(), DateModelSource(), GgufSource(),
                               TransformerSource())  # the last takes any name


def source_for(ask: Ask) -> Source:
    return next(source for source in SOURCES if source.handles(ask))


def trace_for(ask: Ask, max_memory: int | None = None) -> Trace:
    """The trace of `ask` from whichever source handles it (a model's ask checked field by field first)."""
    if isinstance(ask, ModelInput):
        check_fields(ask, "model")
    return source_for(ask).trace(ask, max_memory)
