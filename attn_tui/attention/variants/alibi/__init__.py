"""ALiBi: scaled dot plus a per-head bias that falls linearly with the distance |i − j|.

The declaration: everything the front ends read before torch loads. The math is `compute.py`;
the inspector's arithmetic of its own ops is `explain.py`."""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.ask.variant import Variant, split_tail
from attn_tui.i18n import N_
from attn_tui.trace.op import Op


@dataclass(frozen=True)
class DistanceBias(Op):
    """out[i, j] = −m·|i − j|, m = entry `index` of the parameter `slopes`: ALiBi's linear distance bias."""

    slopes: str
    index: int


VARIANT = Variant(
    name="alibi", title="ALiBi (linear distance bias)", order=90,
    stages=("query", "key", "value", "scores", "scaled", "bias", "biased", "masked", "weights", "output", "concat"),
    footprint=lambda z: split_tail(z, 6), learned=False, per_head=True, reads=("heads",),
    explains={
        "bias": N_(
        "ALiBi adds no position to the tokens. Instead each head subtracts its slope m times the distance "
        "between query and key, so far keys score lower; steep heads look nearby, gentle heads look far."),
        "biased": N_(
        "The scaled scores with the distance bias added. Between two equally good keys, the nearer one now "
        "wins."),
    },
)
