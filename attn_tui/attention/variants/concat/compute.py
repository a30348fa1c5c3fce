"""The concat score: e_ij = v_cᵀ tanh(W_c [q_i; k_j]).

    pairs = torch.cat([q[:, None].expand(-1, S, -1), k[None].expand(L, -1, -1)], -1)   # (L, S, d_q + d_k)
    s = torch.tanh(pairs @ W_c.T) @ v_c                                                  # (L, S)
    a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    o = a @ v                                                                            # (L, d_v)

Written literally: each (query, key) pair is concatenated before one matrix product,
which equals additive attention with W_c split in two, and the UI can show both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.trace.ops import Reduce, TanhOfPair
from attn_tui.trace.stage import dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    hidden = ctx.hidden or q.shape[1]
    w_c = ctx.params.weight("W_c", hidden, q.shape[1] + k.shape[1])  # (H, d_q + d_k)
    v_c = ctx.params.normal("v_c", hidden, std=hidden**-0.5)  # (H,)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        q_rows, k_cols = q[rows], k[cols]
        n_q, n_k = q_rows.shape[0], k_cols.shape[0]
        pairs = torch.cat([q_rows[:, None, :].expand(n_q, n_k, -1), k_cols[None, :, :].expand(n_q, n_k, -1)], dim=-1)
        energy = torch.tanh(pairs @ w_c.T)  # (rows, cols, H)
        return {"energy": energy[None], "scores": (energy @ v_c)[None]}

    ctx.record_geometry(1.0)  # a small network scores each pair; only the temperature scales it
    ctx.scores(pre, [
        PreStage("energy", "E[i,j] = tanh(W_c [q_i; k_j])", (*ctx.qk_axes, dim_axis(hidden, "hidden", "u")),
                 lambda at: TanhOfPair(at.at("query"), at.at("key"), "W_c")),
        PreStage("scores", "S[i,j] = v_cᵀ E[i,j]", ctx.qk_axes, lambda at: Reduce(at.at("energy"), "v_c")),
    ], "scores")
