"""Multi-head self-attention: one fused qkv projection, h scaled-dot heads, then W_o.

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Sizes, Variant


def _footprint(z: Sizes) -> dict[str, int]:
    d, n = z.d_q, z.queries
    return {"parameters": 4 * d * d + 4 * d, "qkv_proj": 3 * n * d, "score stages": 4 * z.heads * n * n,
            "output": 3 * n * d}


VARIANT = Variant(
    name="multihead", title="Multi-head", order=60,
    stages=("qkv_proj", "query", "key", "value", "scores", "scaled", "masked", "weights", "output", "concat",
            "projected"),
    footprint=_footprint, takes_x=True, reads=("heads",),
)
