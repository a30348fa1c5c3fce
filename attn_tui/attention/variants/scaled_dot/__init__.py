"""Scaled dot product, softmax(QKᵀ/√d_k)V: the Transformer's form.

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Variant, score_tail

VARIANT = Variant(
    name="scaled_dot", title="Scaled dot product", order=20,
    stages=("query", "key", "value", "scores", "scaled", "masked", "weights", "output"),
    footprint=lambda z: score_tail(z, 4), learned=False,
)
