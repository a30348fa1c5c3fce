"""Bahdanau's additive score: e_ij = v_aᵀ tanh(W_a q_i + U_a k_j).

A one-hidden-layer network judges each (query, key) pair; projecting query and key
separately means the (L, S, hidden) energy needs only a broadcast add.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.core.ops import Linear, Place, Reduce, TanhOfSum
from attn_tui.core.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.core.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    hidden = ctx.hidden or q.shape[1]
    hid = dim_axis(hidden, "hidden", "h")
    w_a = ctx.params.weight("W_a", hidden, q.shape[1])  # (H, d_q)
    u_a = ctx.params.weight("U_a", hidden, k.shape[1])  # (H, d_k)
    v_a = ctx.params.normal("v_a", hidden, std=hidden**-0.5)  # (H,)
    add = ctx.trace.add
    qp = add(Stage(Place("query_proj"), q @ w_a.T, "W_a q_i for every query", (ctx.query_axis, hid),
                   Linear(Place("query"), "W_a")))
    kp = add(Stage(Place("key_proj"), k @ u_a.T, "U_a k_j for every key", (ctx.key_axis, hid),
                   Linear(Place("key"), "U_a")))
    energy = add(Stage(Place("energy"), torch.tanh(qp[:, None, :] + kp[None, :, :]), "E[i,j] = tanh(W_a q_i + U_a k_j)",
                       (ctx.query_axis, ctx.key_axis, hid), TanhOfSum(Place("query_proj"), Place("key_proj"))))
    add(Stage(Place("scores"), energy @ v_a, "S[i,j] = v_aᵀ E[i,j]", (ctx.query_axis, ctx.key_axis),
              Reduce(Place("energy"), "v_a")))  # (L, S)
    ctx.attend(Place("scores"), Place("value"))
