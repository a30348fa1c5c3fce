"""Scaled dot-product attention, softmax(QKᵀ/√d_k)V: the Transformer's form.

Dividing by √d_k keeps the scores' variance near 1 whatever the width, so softmax
does not saturate into a one-hot as d_k grows.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attn_tui.core.stage import Stage

if TYPE_CHECKING:
    from attn_tui.core.engine import Context



def scale_stages(ctx: Context, q: torch.Tensor, k: torch.Tensor, head: int | None = None) -> torch.Tensor:
    """scores and scaled stages; shared with each head of multihead. Returns scaled (L, S)."""
    axes = (ctx.query_axis, ctx.key_axis)
    d_k = q.shape[-1]
    scores = ctx.trace.add(Stage("scores", q @ k.T, "S = Q·Kᵀ: S[i,j] = q_i·k_j", axes, head))  # (L, S)
    scale_factor = 1 / math.sqrt(d_k)
    return ctx.trace.add(Stage("scaled", scores * scale_factor,
                               f"S' = S / √d_k   (d_k = {d_k}, √d_k = {math.sqrt(d_k):.4g})", axes, head))


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    ctx.attend(scale_stages(ctx, q, k), v, "S'")
