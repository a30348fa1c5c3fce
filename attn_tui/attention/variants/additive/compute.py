"""Bahdanau's additive score: e_ij = v_aᵀ tanh(W_a q_i + U_a k_j).

    energy = torch.tanh((q @ W_a.T)[:, None] + (k @ U_a.T)[None])   # (L, S, hidden)  (+ b_W, b_U with --bias)
    s = energy @ v_a                                                # (L, S)  (+ b_v with --bias)
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
    hid = dim_axis(hidden, "hidden", "u")  # hidden units u0…: h_j names the keys
    w_a = ctx.params.weight("W_a", hidden, q.shape[1])  # (H, d_q)
    u_a = ctx.params.weight("U_a", hidden, k.shape[1])  # (H, d_k)
    v_a = ctx.params.normal("v_a", hidden, std=hidden**-0.5)  # (H,)
    qp, kp = q @ w_a.T, k @ u_a.T  # (L, H), (S, H)
    biased = ctx.settings.bias  # each of the three as nn.Linear with its bias (note 004's Wa, Ua and Va)
    if biased:
        qp = qp + ctx.params.bias("b_W_a", hidden, q.shape[1])  # (H,) broadcast over the queries
        kp = kp + ctx.params.bias("b_U_a", hidden, k.shape[1])
    b_v = ctx.params.bias("b_v_a", 1, hidden) if biased else torch.zeros((), dtype=v_a.dtype, device=v_a.device)
    ctx.trace.add(Stage(Place("query_proj"), qp,
                        Msg("W_a q_i + b_W_a for every query") if biased else Msg("W_a q_i for every query"),
                        (ctx.query_axis, hid), Linear(Place("query"), "W_a", "b_W_a" if biased else None)))
    ctx.trace.add(Stage(Place("key_proj"), kp,
                        Msg("U_a k_j + b_U_a for every key") if biased else Msg("U_a k_j for every key"),
                        (ctx.key_axis, hid), Linear(Place("key"), "U_a", "b_U_a" if biased else None)))

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        energy = torch.tanh(qp[rows][:, None, :] + kp[cols][None, :, :])  # (rows, cols, H)
        return {"energy": energy[None], "scores": (energy @ v_a + b_v)[None]}  # (1, rows, cols)

    ctx.record_geometry(1.0)  # a small network scores each pair; only the temperature scales it
    ctx.scores(pre, [
        PreStage("energy", "E[i,j] = tanh(W_a q_i + b_W_a + U_a k_j + b_U_a)" if biased
                 else "E[i,j] = tanh(W_a q_i + U_a k_j)", (*ctx.qk_axes, hid),
                 lambda at: TanhOfSum(at.at("query_proj"), at.at("key_proj"))),
        PreStage("scores", "S[i,j] = v_aᵀ E[i,j]" + (" + b_v_a" if biased else ""), ctx.qk_axes,
                 lambda at: Reduce(at.at("energy"), "v_a", "b_v_a" if biased else None)),
    ], "scores")
