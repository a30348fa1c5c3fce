"""The trained seq2seq date models (GRU encoder-decoder, Bahdanau or Luong attention) as a source."""

from __future__ import annotations

from functools import lru_cache

from attn_tui.core.settings import ModelInput
from attn_tui.core.stage import Trace
from attn_tui.models.seq2seq.net import Seq2Seq
from attn_tui.sources.base import Ask
from attn_tui.sources.names import DATE_MODELS


@lru_cache(maxsize=2)
def _model(name: str) -> Seq2Seq:
    from attn_tui.models.seq2seq.train import load_shipped

    return load_shipped(DATE_MODELS[name])


class DateModelSource:
    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, ModelInput) and ask.name in DATE_MODELS

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        assert isinstance(ask, ModelInput)
        from attn_tui.models.seq2seq.codec import check_target
        from attn_tui.sources.dates import decode_trace

        if ask.target:  # as the command line checks it, so the app and the API refuse the same targets
            check_target(ask.target)

        return decode_trace(_model(ask.name), ask.text, ask.target, ask.teacher_forcing, ask.name, max_memory)
