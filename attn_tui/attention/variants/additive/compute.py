"""Bahdanau's additive score: e_ij = v_aᵀ tanh(W_a q_i + U_a k_j).

    energy = torch.tanh((q @ W_a.T)[:, None] + (k @ U_a.T)[None])   # (L, S, hidden)
    s = energy @ v_a                                                # (L, S)
    a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    o = a @ v                                                       # (L, d_v)

A one-hidden-layer network judges each (query, key) pair; projecting query and key
separately means the (L, S, hidden) energy needs only a broadcast add, and a long input
builds it only for the tile (or the query) on show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.i18n import Msg
from attn_tui.trace.ops import Linear, Place, Reduce, TanhOfSum
from attn_tui.trace.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    hidden = ctx.hidden or q.shape[1]
    hid = dim_axis(hidden, "hidden", "h")
    w_a = ctx.params.weight("W_a", hidden, q.shape[1])  # (H, d_q)
    u_a = ctx.params.weight("U_a", hidden, k.shape[1])  # (H, d_k)
    v_a = ctx.params.normal("v_a", hidden, std=hidden**-0.5)  # (H,)
    qp = ctx.trace.add(Stage(Place("query_proj"), q @ w_a.T, Msg("W_a q_i for every query"), (ctx.query_axis, hid),
                             Linear(Place("query"), "W_a")))  # (L, H)
    kp = ctx.trace.add(Stage(Place("key_proj"), k @ u_a.T, Msg("U_a k_j for every key"), (ctx.key_axis, hid),
                             Linear(Place("key"), "U_a")))  # (S, H)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        energy = torch.tanh(qp[rows][:, None, :] + kp[cols][None, :, :])  # (rows, cols, H)
        return {"energy": energy[None], "scores": (energy @ v_a)[None]}

    ctx.record_geometry(1.0)  # a small network scores each pair; only the temperature scales it
    ctx.scores(pre, [
        PreStage("energy", "E[i,j] = tanh(W_a q_i + U_a k_j)", (*ctx.qk_axes, hid),
                 lambda at: TanhOfSum(at.at("query_proj"), at.at("key_proj"))),
        PreStage("scores", "S[i,j] = v_aᵀ E[i,j]", ctx.qk_axes, lambda at: Reduce(at.at("energy"), "v_a")),
    ], "scores")
