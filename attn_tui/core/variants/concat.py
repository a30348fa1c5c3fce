"""The concat score: e_ij = v_cᵀ tanh(W_c [q_i; k_j]).

Written literally: each (query, key) pair is concatenated before one matrix product,
which equals additive attention with W_c split in two, and the UI can show both ways.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.core.ops import Place, Reduce, TanhOfPair
from attn_tui.core.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.core.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    hidden = ctx.hidden or q.shape[1]
    n_q, n_k = q.shape[0], k.shape[0]
    w_c = ctx.params.weight("W_c", hidden, q.shape[1] + k.shape[1])  # (H, d_q + d_k)
    v_c = ctx.params.normal("v_c", hidden, std=hidden**-0.5)  # (H,)
    pairs = torch.cat([q[:, None, :].expand(n_q, n_k, -1), k[None, :, :].expand(n_q, n_k, -1)], dim=-1)
    energy = ctx.trace.add(Stage(Place("energy"), torch.tanh(pairs @ w_c.T), "E[i,j] = tanh(W_c [q_i; k_j])",
                                 (ctx.query_axis, ctx.key_axis, dim_axis(hidden, "hidden", "h")),
                                 TanhOfPair(Place("query"), Place("key"), "W_c")))  # (L, S, H)
    ctx.trace.add(Stage(Place("scores"), energy @ v_c, "S[i,j] = v_cᵀ E[i,j]", (ctx.query_axis, ctx.key_axis),
                        Reduce(Place("energy"), "v_c")))  # (L, S)
    ctx.attend(Place("scores"), Place("value"))
