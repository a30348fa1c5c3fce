"""ALiBi (Press et al., 2022): scaled dot plus a per-head bias that falls linearly with the distance |i − j|.

    m = 2 ** (-8 * torch.arange(1, H + 1) / H)          # (H,): each head's slope (heads a power of two)
    bias = -m[:, None, None] * (i[:, None] - j[None]).abs()    # (H, L, S), i = arange(L), j = arange(S)
    s = q @ k.transpose(-1, -2) / math.sqrt(d_h) + bias        # q (H, L, d_h), k (H, S, d_h)
    a = torch.softmax(s.masked_fill(~mask, float("-inf")), dim=-1)
    o = a @ v                                                  # (H, L, d_h)

No position is added to the tokens; instead each head penalises far keys at its own
rate m_h, a geometric sequence (2^(−8/H), 2^(−16/H), …), so some heads look near and
some far, and the model reads inputs longer than it was trained on. The slopes are
fixed, not learned; the bias of any tile is computed from its rows and columns alone.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage, score_stages
from attn_tui.attention.variants.alibi import DistanceBias
from attn_tui.attention.variants.heads import concat_heads, heads_of
from attn_tui.attention.variants.modifiers import gate, norm_qk, normed_scores, soft_cap
from attn_tui.attention.variants.scaled_dot.compute import scaled_stages
from attn_tui.i18n import Msg
from attn_tui.trace.geometry import HeadGeometry, Positional
from attn_tui.trace.ops import Sum

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

SLOPES = "alibi_slopes"  # the parameter the slopes are recorded as (fixed, not learned)


def slopes(heads: int) -> list[float]:
    """ALiBi's slopes for `heads` heads, as the paper's code computes them (interleaved for a non-power of 2)."""
    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(heads).is_integer():
        return power_of_2(heads)
    closest = 2 ** math.floor(math.log2(heads))
    return power_of_2(closest) + slopes(2 * closest)[0::2][: heads - closest]


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    heads = heads_of(q, k, v)
    m = torch.tensor(slopes(heads.count), dtype=q.dtype, device=q.device)  # (H,)
    ctx.trace.params[SLOPES] = m
    stages, factor = scaled_stages(ctx.qk_axes, heads.q.shape[-1])
    ctx.record_geometry(factor, Positional("alibi"),
                        tuple(HeadGeometry(h, slope=slope) for h, slope in enumerate(m.tolist())))
    qh, kh = norm_qk(ctx, heads.q, heads.k, [at.at("query") for at in heads.scores_at],
                     [at.at("key") for at in heads.scores_at], range(heads.count))  # (H, L, d), (H, S, d)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        scores = qh[:, rows] @ kh[:, cols].transpose(-2, -1)  # (H, rows, cols)
        scaled = scores * factor
        r0, r1, _ = rows.indices(qh.shape[1])
        c0, c1, _ = cols.indices(kh.shape[1])
        i = torch.arange(r0, r1, device=q.device)[:, None]
        j = torch.arange(c0, c1, device=q.device)[None, :]
        distance = (i - j).abs().to(q.dtype)  # (rows, cols)
        bias = 0.0 - m[:, None, None] * distance  # (H, rows, cols); 0.0 − … keeps the diagonal +0, not −0
        return {"scores": scores, "scaled": scaled, "bias": bias, "biased": scaled + bias}

    stages += [
        PreStage("bias", Msg("B[i,j] = −m_h·|i − j|: ALiBi's linear distance bias, slope m_h = {slopes} (head by "
                             "head)", slopes=", ".join(f"{s:.4g}" for s in m.tolist())), ctx.qk_axes,
                 lambda at: DistanceBias(SLOPES, at.head or 0)),
        PreStage("biased", Msg("S' + B: the scaled scores with the bias added"), ctx.qk_axes,
                 lambda at: Sum((at.at("scaled"), at.at("bias")))),
    ]
    capped, stages, last = soft_cap(ctx, pre, normed_scores(ctx, stages), "biased")
    outputs = score_stages(ctx.trace, ctx.tail, capped, stages, last, heads.v, heads.scores_at, heads.values_at,
                           ctx.lazy)
    concat_heads(ctx, heads, *gate(ctx, outputs, [at.at("output") for at in heads.scores_at]))
