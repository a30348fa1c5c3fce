"""The concat score, v·tanh(W[q; k]).

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Sizes, Variant, score_tail
from attn_tui.i18n import N_


def _footprint(z: Sizes) -> dict[str, int]:
    return score_tail(z, 3) | {"parameters": z.hidden * (z.d_q + z.d_k + 1),
                               "pairs [q; k]": z.queries * z.keys * (z.d_q + z.d_k),
                               "energy": 2 * z.queries * z.keys * z.hidden}


VARIANT = Variant(
    name="concat", title="Concat", order=50,
    stages=("query", "key", "value", "energy", "scores", "masked", "weights", "output"),
    footprint=_footprint, same_width=False, uses_hidden=True, score_based=False,
    explains={
        "scores": N_(
        "The energy vector of each pair is reduced to one number by a learned vector v_c. The concat form"
        " is additive attention with its two weight matrices written as one."),
    },
)
