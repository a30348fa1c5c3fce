"""Scaled dot-product attention, softmax(QKᵀ/√d_k)V: the Transformer's form.

Dividing by √d_k keeps the scores' variance near 1 whatever the width, so softmax
does not saturate into a one-hot as d_k grows.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from attn_tui.core.ops import Dot, Place, Scale
from attn_tui.core.stage import Axis, Stage, Trace

if TYPE_CHECKING:
    from attn_tui.core.engine import Context

SCALE_REASON = "keeps the scores near unit variance so softmax does not saturate"


def scale_stages(trace: Trace, q: torch.Tensor, k: torch.Tensor, axes: tuple[Axis, Axis], at: Sequence[Place],
                 scale: float | None = None) -> torch.Tensor:
    """scores and scaled from q (…, L, d) and k (…, S, d), batched over heads; returns scaled (…, L, S).

    Head n's stages are recorded at `at[n]`'s layer and head, as views of the batched
    tensors. `scale` None is 1/√d_k; a real model passes its own factor.
    """
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)  # (…, L, S)
    if scale is None:
        factor, formula = 1 / math.sqrt(d_k), f"S' = S / √d_k   (d_k = {d_k}, √d_k = {math.sqrt(d_k):.4g})"
    else:
        factor, formula = scale, f"S' = S · {scale:.4g}   (the model's own scaling, d_k = {d_k})"
    scaled = scores * factor
    batched = (scores, scaled) if scores.dim() == 3 else (scores[None], scaled[None])
    for n, place in enumerate(at):
        trace.add(Stage(place.at("scores"), batched[0][n], "S = Q·Kᵀ: S[i,j] = q_i·k_j", axes,
                        Dot(place.at("query"), place.at("key"))))
        trace.add(Stage(place.at("scaled"), batched[1][n], formula, axes, Scale(place.at("scores"), factor,
                                                                               SCALE_REASON)))
    return scaled


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    scale_stages(ctx.trace, q, k, (ctx.query_axis, ctx.key_axis), [Place("scores")])
    ctx.attend(Place("scaled"), Place("value"))
