"""Scaled dot-product attention, softmax(QKᵀ/√d_k)V: the Transformer's form.

    s = q @ k.T / math.sqrt(q.shape[-1])                # (L, S)
    s = s.masked_fill(~mask, float("-inf"))            # mask (L, S): True where query i may attend to key j
    a = torch.softmax(s / temperature, dim=-1)         # (L, S)
    o = a @ v                                          # (L, d_v): at temperature 1, SDPA(q, k, v, mask)

Dividing by √d_k keeps the scores' variance near 1 whatever the width, so softmax
does not saturate into a one-hot as d_k grows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.attention.variants.modifiers import gate, norm_qk, normed_scores, soft_cap
from attn_tui.i18n import N_, Msg
from attn_tui.trace.lazy import PreTile
from attn_tui.trace.ops import Dot, Place, Scale
from attn_tui.trace.stage import Axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

SCALE_REASON = N_("keeps the scores near unit variance so softmax does not saturate")


def scaled_pre(q: torch.Tensor, k: torch.Tensor, factor: float) -> PreTile:
    """scores and scaled on any tile, for every head: q (heads, L, d), k (heads, S, d)."""
    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        scores = q[:, rows] @ k[:, cols].transpose(-2, -1)  # (heads, rows, cols)
        return {"scores": scores, "scaled": scores * factor}

    return pre


def scaled_stages(axes: tuple[Axis, Axis], d_k: int, scale: float | None = None) -> tuple[list[PreStage], float]:
    """The scores and scaled stages, and the factor: 1/√d_k, or a model's own `scale`."""
    formula: str | Msg
    if scale is None:
        factor, formula = 1 / math.sqrt(d_k), f"S' = S / √d_k   (d_k = {d_k}, √d_k = {math.sqrt(d_k):.4g})"
    else:
        factor, formula = scale, Msg("S' = S · {scale}   (the model's own scaling, d_k = {d_k})",
                                     scale=f"{scale:.4g}", d_k=d_k)
    return [PreStage("scores", "S = Q·Kᵀ: S[i,j] = q_i·k_j", axes, lambda at: Dot(at.at("query"), at.at("key"))),
            PreStage("scaled", formula, axes, lambda at: Scale(at.at("scores"), factor, SCALE_REASON))], factor


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    qn, kn = norm_qk(ctx, q[None], k[None], [Place("query")], [Place("key")], [0])  # (1, L, d), (1, S, d)
    stages, factor = scaled_stages(ctx.qk_axes, q.shape[-1])
    pre, stages, last = soft_cap(ctx, scaled_pre(qn, kn, factor), normed_scores(ctx, stages), "scaled")
    ctx.record_geometry(factor)
    gate(ctx, ctx.scores(pre, stages, last)[None], [Place("output")])
