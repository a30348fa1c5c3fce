"""Luong's "general" (bilinear) score, (W_a q)·k.

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Variant, score_tail
from attn_tui.i18n import N_

VARIANT = Variant(
    name="general", title="Luong general (bilinear)", order=30,
    stages=("query", "key", "value", "query_proj", "scores", "masked", "weights", "output"),
    footprint=lambda z: score_tail(z, 3) | {"parameters": z.d_k * z.d_q, "query_proj": z.queries * z.d_k},
    same_width=False,
    explains={
        "scores": N_(
        "Each projected query W_a q is compared with every key by a dot product. The learned W_a decides "
        "which features of the query should line up with which features of the key."),
    },
)
