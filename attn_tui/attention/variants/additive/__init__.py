"""Bahdanau's additive score, v_aᵀ tanh(W_a q + U_a k).

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.variant import Sizes, Variant, score_tail
from attn_tui.i18n import N_


def _footprint(z: Sizes) -> dict[str, int]:
    return score_tail(z, 3) | {"parameters": z.hidden * (z.d_q + z.d_k + 1),
                               "projections": (z.queries + z.keys) * z.hidden,
                               "energy": 2 * z.queries * z.keys * z.hidden}  # the sum, then its tanh


VARIANT = Variant(
    name="additive", title="Bahdanau additive", order=40,
    stages=("query", "key", "value", "query_proj", "key_proj", "energy", "scores", "masked", "weights", "output"),
    footprint=_footprint, same_width=False, uses_hidden=True, score_based=False, reads=("bias",),
    explains={
        "query_proj": N_(
        "Bahdanau attention first maps each query into a hidden space with W_a. Doing it once per query, "
        "rather than once per query-key pair, keeps the cost down."),
        "scores": N_(
        "The energy vector of each pair is reduced to one number by a learned vector v_a. The score is "
        "what a tiny network thinks of the match, not a plain dot product."),
    },
)
