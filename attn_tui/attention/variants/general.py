"""Luong's "general" (bilinear) score: score(q, k) = (W_a q)·k.

A learned W_a lets the query be re-expressed before comparing, so query and key may
even have different widths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.i18n import Msg
from attn_tui.trace.ops import Dot, Linear, Place
from attn_tui.trace.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    w_a = ctx.params.weight("W_a", k.shape[1], q.shape[1])  # (d_k, d_q)
    query_proj = ctx.trace.add(Stage(Place("query_proj"), q @ w_a.T, Msg("Q' = Q·W_aᵀ: row i is W_a q_i"),
                                     (ctx.query_axis, dim_axis(k.shape[1])), Linear(Place("query"), "W_a")))  # (L, d_k)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        return {"scores": (query_proj[rows] @ k[cols].T)[None]}  # (1, rows, cols)

    stage = PreStage("scores", "S = Q'·Kᵀ: S[i,j] = (W_a q_i)·k_j", ctx.qk_axes,
                     lambda at: Dot(at.at("query_proj"), at.at("key")))
    ctx.record_geometry(1.0)  # (W_a q)·k unscaled
    ctx.scores(pre, [stage], "scores")
