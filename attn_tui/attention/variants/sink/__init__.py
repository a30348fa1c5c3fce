"""Attention sinks: a learned logit per head joins each row's softmax and is then dropped.

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Variant, split_tail
from attn_tui.i18n import N_

VARIANT = Variant(
    name="sink", title="Attention sink (learned logit)", order=100,
    stages=("query", "key", "value", "scores", "scaled", "masked", "weights", "sink_mass", "output", "concat"),
    footprint=lambda z: split_tail(z, 4) | {"sink_mass": z.heads * z.queries}, per_head=True, reads=("heads",),
    explains={
        "weights": N_(
        "Softmax runs over the keys plus one more logit, the head's learned sink. The sink's share is then "
        "dropped, so a row sums to less than 1: a head that finds nothing useful can give its weight away "
        "instead of piling it on some token."),
    },
)
