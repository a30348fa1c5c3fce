"""Plain dot-product attention: scores are raw q·k, with no scaling.

    s = q @ k.T                                         # (L, S): raw q·k, no scaling
    s = s.masked_fill(~mask, float("-inf"))            # mask (L, S): True where query i may attend to key j
    a = torch.softmax(s, dim=-1)                       # (L, S): each row sums to 1
    o = a @ v                                          # (L, d_v)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.attention.variants.modifiers import gate, norm_qk, normed_scores, soft_cap
from attn_tui.trace.ops import Dot, Place

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    qn, kn = norm_qk(ctx, q[None], k[None], [Place("query")], [Place("key")], [0])  # (1, L, d), (1, S, d)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        return {"scores": qn[:, rows] @ kn[:, cols].transpose(-2, -1)}  # (1, rows, cols)

    stage = PreStage("scores", "S = Q·Kᵀ: S[i,j] = q_i·k_j", ctx.qk_axes, lambda at: Dot(at.at("query"), at.at("key")))
    capped, stages, last = soft_cap(ctx, pre, normed_scores(ctx, [stage]), "scores")
    ctx.record_geometry(1.0)  # raw q·k: nothing scales it but the temperature
    gate(ctx, ctx.scores(capped, stages, last)[None], [Place("output")])
