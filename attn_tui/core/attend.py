"""The tail every source shares: masked → weights → output, each recorded with the op that made it.

Variants, real transformers and trained decoders all end the same way, so the masking
rules, the float32 promotion, the empty-row handling, the formulas and the cell
explainers of these three stages exist here once. Scores for several heads at once are
handled in one batched pass; each head's stages are views of the batched tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_tui.core import masks
from attn_tui.core.masks import MaskSpec
from attn_tui.core.ops import Masking, Place, Softmax, WeightedSum
from attn_tui.core.stage import Axis, Stage, Trace, dim_axis


@dataclass(frozen=True)
class Tail:
    """How the tail masks and what it calls its output."""

    query_axis: Axis
    key_axis: Axis
    mask: MaskSpec | None = None
    fill: str = "-inf"
    temperature: float = 1.0
    output: str = "output"  # "context" for a decoder's step
    output_formula: str = "O = A·V: each row is a weighted sum of value rows"


def masked_formula(source: str, tail: Tail) -> str:
    scaled = f"{source} / T (T = {tail.temperature:g})" if tail.temperature != 1 else source
    if tail.mask is None:
        return f"M = {scaled}   (no mask)"
    return (f"M = {scaled} where mask = 1, {tail.fill.replace('inf', '∞')} where mask = 0   "
            f"(mask: {tail.mask.describe()}; 1 = may attend)")


def attend(trace: Trace, tail: Tail, scores: torch.Tensor, values: torch.Tensor,
           scores_at: Sequence[Place], values_at: Sequence[Place]) -> torch.Tensor:
    """Record masked, weights and output for each head; return the outputs (heads, L, d_v) or (L, d_v).

    scores (L, S) or (heads, L, S); values (S, d_v) or (heads, S, d_v); `scores_at[n]` and
    `values_at[n]` are the places of head n's scores and values.
    """
    batched = scores.dim() == 3
    scores_b = scores if batched else scores[None]  # (n, L, S)
    values_b = values if values.dim() == 3 else values[None]  # (n, S, d_v)
    allowed = None if tail.mask is None else tail.mask.allowed
    promoted = scores_b.to(masks.softmax_dtype(scores_b.dtype))
    divided = promoted / tail.temperature if tail.temperature != 1 else promoted
    masked = masks.apply_mask(divided, allowed, tail.fill)  # (n, L, S)
    weights = masks.masked_softmax(masked, allowed)  # (n, L, S)
    output = weights.to(values_b.dtype) @ values_b  # (n, L, d_v)
    qk = (tail.query_axis, tail.key_axis)
    out_axes = (tail.query_axis, dim_axis(values_b.shape[-1]))
    for n, (at, value_at) in enumerate(zip(scores_at, values_at)):
        source = trace.stages[at].symbol
        trace.add(Stage(at.at("masked"), masked[n], masked_formula(source, tail), qk,
                        Masking(at, tail.mask, tail.fill, tail.temperature)))
        trace.add(Stage(at.at("weights"), weights[n], "A = softmax(M) over keys: each row sums to 1", qk,
                        Softmax(at.at("masked"))))
        trace.add(Stage(at.at(tail.output), output[n], tail.output_formula, out_axes,
                        WeightedSum(at.at("weights"), value_at)))
    for row in masks.fully_masked_rows(allowed):
        effect = ("its weights and output are zeros" if tail.fill == "-inf"
                  else "its weights are uniform over all keys")
        trace.warn(f"query {tail.query_axis.labels[row]!r} (row {row}) may attend to no key: with fill {tail.fill} "
                   f"{effect}")
    return output if batched else output[0]
