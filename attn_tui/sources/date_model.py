"""The trained seq2seq date models as a source: the GRU encoder-decoders (Bahdanau or Luong attention)
and the transformer encoder-decoder."""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import TYPE_CHECKING

from attn_tui.ask.models import DATE_MODELS
from attn_tui.ask.settings import Ask, ModelAsk
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.trace.stage import Trace

if TYPE_CHECKING:
    from attn_tui.models.seq2seq.train import DateModel


@lru_cache(maxsize=3)
def date_model(name: str) -> DateModel:
    """A shipped date model by name (loaded once)."""
    from attn_tui.models.seq2seq.train import load_shipped

    return load_shipped(DATE_MODELS[name])


class DateModelSource:
    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, ModelAsk) and ask.name in DATE_MODELS

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        return self.trace_growing(ask, max_memory, None)

    def trace_growing(self, ask: Ask, max_memory: int | None, on_step: Callable[[Trace], None] | None) -> Trace:
        """Decode step by step, handing `on_step` the trace after each step (teacher-forced or free)."""
        assert isinstance(ask, ModelAsk)
        from attn_tui.models.seq2seq.codec import check_target
        from attn_tui.models.seq2seq.transformer import DateTransformer

        if ask.target:  # the one check of a target's characters: the command line, the app and the API alike
            check_target(ask.target)
        model = date_model(ask.name)
        if isinstance(model, DateTransformer):
            if not 0 <= ask.layer < model.cfg.layers:
                raise ConfigError(Msg("--layer {value} is out of range: {name} has layers 0…{last}",
                                      value=ask.layer, name=ask.name, last=model.cfg.layers - 1))
            if not 0 <= ask.head < model.cfg.heads:
                raise ConfigError(Msg("--head {value} is out of range: {name} has heads 0…{last}",
                                      value=ask.head, name=ask.name, last=model.cfg.heads - 1))
            from attn_tui.sources.date_transformer import decode_trace as transformer_trace

            return transformer_trace(model, ask.text, ask.target, ask.teacher_forcing, ask.name, max_memory, on_step)
        from attn_tui.sources.dates import decode_trace

        return decode_trace(model, ask.text, ask.target, ask.teacher_forcing, ask.name, max_memory, on_step)
