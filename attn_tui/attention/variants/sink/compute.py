"""Attention sinks, as GPT-OSS has them: a learned logit per head joins each row's softmax and is then dropped.

    s = q @ k.transpose(-1, -2) / math.sqrt(d_h)          # (H, L, S)
    s = s.masked_fill(~mask, float("-inf"))
    both = torch.cat([s, sink[:, None, None].expand(-1, L, 1)], -1)    # (H, L, S + 1): a logit per head
    a = torch.softmax(both, dim=-1)[..., :-1]            # the sink's share dropped: rows sum to 1 − p_sink
    o = a @ v                                            # (H, L, d_h)

Without it a head that finds nothing worth reading must still hand out all its weight,
and trained models dump it on the first token (the "attention sink"). A sink logit
gives that weight a place to go: the row's weights then sum to 1 − p_sink, and the
`sink_mass` stage shows how much each query gave away.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import score_stages
from attn_tui.attention.variants.heads import concat_heads, heads_of
from attn_tui.attention.variants.modifiers import gate, norm_qk, normed_scores, soft_cap
from attn_tui.attention.variants.scaled_dot.compute import scaled_pre, scaled_stages
from attn_tui.trace import masks

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

SINK = "sink"  # the parameter: one logit per head


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    heads = heads_of(q, k, v)
    sink = ctx.params.normal(SINK, heads.count, std=1.0)  # (H,) seeded, as if learned
    tail = replace(ctx.tail, sink=sink.to(masks.softmax_dtype(sink.dtype)), sink_name=SINK)
    q, k = norm_qk(ctx, heads.q, heads.k, [at.at("query") for at in heads.scores_at],
                   [at.at("key") for at in heads.scores_at], range(heads.count))  # (H, L, d), (H, S, d)
    stages, factor = scaled_stages(ctx.qk_axes, heads.q.shape[-1])
    pre, stages, last = soft_cap(ctx, scaled_pre(q, k, factor), normed_scores(ctx, stages), "scaled")
    ctx.record_geometry(factor, sink=True)
    outputs = score_stages(ctx.trace, tail, pre, stages, last, heads.v, heads.scores_at, heads.values_at, ctx.lazy)
    concat_heads(ctx, heads, *gate(ctx, outputs, [at.at("output") for at in heads.scores_at]))
