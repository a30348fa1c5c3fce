"""Plain dot product: scores are raw q·k, with no scaling.

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Variant, score_tail

VARIANT = Variant(
    name="dot", title="Dot product", order=10,
    stages=("query", "key", "value", "scores", "masked", "weights", "output"),
    footprint=lambda z: score_tail(z, 3), learned=False,
)
