"""Multi-head self-attention: one fused qkv projection, h scaled-dot heads, then W_o.

Laid out exactly like nn.MultiheadAttention (in_proj_weight rows [q | k | v], head h
owns columns h·d_h … (h+1)·d_h), so its weights can be copied in and compared.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.core.errors import ConfigError
from attn_tui.core.stage import Axis, Stage, dim_axis
from attn_tui.core.variants.scaled_dot import scale_stages

if TYPE_CHECKING:
    from attn_tui.core.engine import Context



def run(ctx: Context, x: torch.Tensor, heads: int) -> None:
    n, d_model = x.shape
    if heads < 1 or d_model % heads:
        raise ConfigError(f"--heads {heads} does not divide the model dimension {d_model}")
    d_h = d_model // heads
    tokens = ctx.query_axis
    ctx.trace.heads = heads
    w_qkv = ctx.params.weight("W_qkv", 3 * d_model, d_model)  # (3d, d)
    b_qkv = ctx.params.normal("b_qkv", 3 * d_model, std=0.1)  # (3d,)
    w_o = ctx.params.weight("W_o", d_model, d_model)  # (d, d)
    b_o = ctx.params.normal("b_o", d_model, std=0.1)  # (d,)
    qkv = ctx.trace.add(Stage("qkv_proj", x @ w_qkv.T + b_qkv, "[Q | K | V] = X·W_qkvᵀ + b_qkv",
                              (tokens, Axis("qkv", _qkv_labels(d_model)))))  # (N, 3d)
    q_all, k_all, v_all = qkv.split(d_model, dim=-1)  # each (N, d)
    outputs = []
    for h in range(heads):
        cols = slice(h * d_h, (h + 1) * d_h)
        span = f"columns {h * d_h}…{(h + 1) * d_h - 1}"
        head_dims = dim_axis(d_h)
        q = ctx.trace.add(Stage("query", q_all[:, cols], f"Q_{h} = Q[:, {span}]", (tokens, head_dims), h))
        k = ctx.trace.add(Stage("key", k_all[:, cols], f"K_{h} = K[:, {span}]", (ctx.key_axis, head_dims), h))
        v = ctx.trace.add(Stage("value", v_all[:, cols], f"V_{h} = V[:, {span}]", (ctx.key_axis, head_dims), h))
        outputs.append(ctx.attend(scale_stages(ctx, q, k, h), v, "S'", h))
    concat = ctx.trace.add(Stage("concat", torch.cat(outputs, dim=-1),
                                 "C = [O_0 | O_1 | … ]: the heads' outputs side by side",
                                 (tokens, dim_axis(d_model))))  # (N, d)
    ctx.trace.add(Stage("projected", concat @ w_o.T + b_o, "Y = C·W_oᵀ + b_o", (tokens, dim_axis(d_model))))


def _qkv_labels(d_model: int) -> tuple[str, ...]:
    return tuple(f"{part}{i}" for part in "qkv" for i in range(d_model))
