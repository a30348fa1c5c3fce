"""Multi-head self-attention: one fused qkv projection, h scaled-dot heads, then W_o.

    q, k, v = (x @ W_qkv.T + b_qkv).split(d, -1)                          # (L, d) each: in_proj_weight, _bias
    q, k, v = (t.view(L, h, d // h).transpose(0, 1) for t in (q, k, v))   # (h, L, d_h)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)           # (h, L, d_h)
    y = o.transpose(0, 1).reshape(L, d) @ W_o.T + b_o                     # out_proj: nn.MultiheadAttention's output

Laid out exactly like nn.MultiheadAttention (in_proj_weight rows [q | k | v], head h
owns columns h·d_h … (h+1)·d_h), so its weights can be copied in and compared. The
heads run as one batched computation; each head's stages are views of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import score_stages
from attn_tui.attention.variants.modifiers import gate, norm_qk, normed_scores, soft_cap
from attn_tui.attention.variants.scaled_dot.compute import scaled_pre, scaled_stages
from attn_tui.errors import ConfigError
from attn_tui.i18n import Join, Msg
from attn_tui.trace.ops import Columns, Concat, Linear, Place
from attn_tui.trace.stage import Axis, Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, x: torch.Tensor, heads: int) -> None:
    n, d_model = x.shape
    if heads < 1 or d_model % heads:
        raise ConfigError(Msg("--heads {heads} does not divide the model dimension {d}", heads=heads, d=d_model))
    d_h = d_model // heads
    tokens, trace = ctx.query_axis, ctx.trace
    ctx.describe(heads)
    w_qkv = ctx.params.weight("W_qkv", 3 * d_model, d_model)  # (3d, d)
    b_qkv = ctx.params.normal("b_qkv", 3 * d_model, std=0.1)  # (3d,)
    w_o = ctx.params.weight("W_o", d_model, d_model)  # (d, d)
    b_o = ctx.params.normal("b_o", d_model, std=0.1)  # (d,)
    qkv = trace.add(Stage(Place("qkv_proj"), x @ w_qkv.T + b_qkv, "[Q | K | V] = X·W_qkvᵀ + b_qkv",
                          (tokens, Axis("qkv", _qkv_labels(d_model))), Linear(ctx.source, "W_qkv", "b_qkv")))  # (N, 3d)
    per_head = qkv.view(n, 3, heads, d_h).permute(1, 2, 0, 3)  # (3, heads, N, d_h): views, no copies
    head_dims = dim_axis(d_h)
    for h in range(heads):
        span = Msg("columns {first}…{last}", first=h * d_h, last=(h + 1) * d_h - 1)
        for part, (name, axis) in enumerate((("query", tokens), ("key", ctx.key_axis), ("value", ctx.key_axis))):
            letter = name[0].upper()
            trace.add(Stage(Place(name, head=h), per_head[part, h], Join("", f"{letter}_{h} = {letter}[:, ", span, "]"),
                            (axis, head_dims), Columns(Place("qkv_proj"), part * d_model + h * d_h)))
    q, k = norm_qk(ctx, per_head[0], per_head[1], [Place("query", head=h) for h in range(heads)],
                   [Place("key", head=h) for h in range(heads)], range(heads))  # (heads, N, d_h) each
    stages, factor = scaled_stages(ctx.qk_axes, d_h)
    pre, stages, last = soft_cap(ctx, scaled_pre(q, k, factor), normed_scores(ctx, stages), "scaled")
    ctx.record_geometry(factor)
    outputs = score_stages(trace, ctx.tail, pre, stages, last, per_head[2],
                           [Place("scores", head=h) for h in range(heads)],
                           [Place("value", head=h) for h in range(heads)], ctx.lazy)  # (heads, N, d_h)
    outputs, name = gate(ctx, outputs, [Place("output", head=h) for h in range(heads)])
    concat = trace.add(Stage(Place("concat"), outputs.permute(1, 0, 2).reshape(n, d_model),
                             Msg("C = [O_0 | O_1 | … ]: the heads' outputs side by side"), (tokens, dim_axis(d_model)),
                             Concat(tuple(Place(name, head=h) for h in range(heads)))))  # (N, d)
    trace.add(Stage(Place("projected"), concat @ w_o.T + b_o, "Y = C·W_oᵀ + b_o", (tokens, dim_axis(d_model)),
                    Linear(Place("concat"), "W_o", "b_o")))


def _qkv_labels(d_model: int) -> tuple[str, ...]:
    return tuple(f"{part}{i}" for part in "qkv" for i in range(d_model))
