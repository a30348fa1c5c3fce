"""Luong's "general" (bilinear) score: score(q, k) = (W_a q)·k.

    s = (q @ W_a.T) @ k.T                               # (L, S): W_a (d_k, d_q) re-expresses the query
    s = s.masked_fill(~mask, float("-inf"))
    a = torch.softmax(s, dim=-1)
    o = a @ v                                          # (L, d_v)

A learned W_a lets the query be re-expressed before comparing, so query and key may
even have different widths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.attention.variants.modifiers import gate, norm_qk, soft_cap
from attn_tui.i18n import Msg
from attn_tui.trace.ops import Dot, Linear, Place
from attn_tui.trace.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    qn, kn = norm_qk(ctx, q[None], k[None], [Place("query")], [Place("key")], [0])  # (1, L, d_q), (1, S, d_k)
    normed = ctx.settings.qk_norm != "none"
    q_name, k_name = ("query_norm", "key_norm") if normed else ("query", "key")
    w_a = ctx.params.weight("W_a", k.shape[1], q.shape[1])  # (d_k, d_q)
    query_proj = ctx.trace.add(Stage(Place("query_proj"), qn[0] @ w_a.T,
                                     Msg("Q' = Q_n·W_aᵀ: row i is W_a q_n,i") if normed
                                     else Msg("Q' = Q·W_aᵀ: row i is W_a q_i"),
                                     (ctx.query_axis, dim_axis(k.shape[1])), Linear(Place(q_name), "W_a")))  # (L, d_k)
    keys = kn[0]  # (S, d_k)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        return {"scores": (query_proj[rows] @ keys[cols].T)[None]}  # (1, rows, cols)

    stage = PreStage("scores", "S = Q'·Kᵀ: S[i,j] = (W_a q_i)·k_j", ctx.qk_axes,
                     lambda at: Dot(at.at("query_proj"), at.at(k_name)))
    capped, stages, last = soft_cap(ctx, pre, [stage], "scores")
    ctx.record_geometry(1.0)  # (W_a q)·k unscaled
    gate(ctx, ctx.scores(capped, stages, last)[None], [Place("output")])
