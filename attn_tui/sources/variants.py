"""attn-tui's own attention variants as a source: the engine on a sentence or typed matrices."""

from __future__ import annotations

from attn_tui.ask.settings import Ask, VariantAsk
from attn_tui.trace.stage import Trace


class VariantSource:
    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, VariantAsk)

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        assert isinstance(ask, VariantAsk)
        from attn_tui.attention.engine import compute

        return compute(ask, max_memory)

