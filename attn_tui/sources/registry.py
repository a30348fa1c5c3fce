"""Every source of attention, tried in order: the first that handles an ask computes it (door.py calls it).

A new kind of source is one module with a class that follows `base.Source`, and one
line in SOURCES. Loaded models and forward passes are cached by the sources themselves,
so switching layer, head or sentence in the app never loads weights twice.
"""

from __future__ import annotations

from attn_tui.ask.settings import Ask
from attn_tui.sources.base import Source
from attn_tui.sources.date_model import DateModelSource
from attn_tui.sources.generate import GenerationSource
from attn_tui.sources.gguf import GgufSource
from attn_tui.sources.recorder.source import RecorderSource
from attn_tui.sources.transformer import TransformerSource
from attn_tui.sources.variants import VariantSource

SOURCES: tuple[Source, ...] = (VariantSource(), RecorderSource(), DateModelSource(), GenerationSource(),
                               GgufSource(), TransformerSource())  # the last takes any name


def source_for(ask: Ask) -> Source:
    return next(source for source in SOURCES if source.handles(ask))

