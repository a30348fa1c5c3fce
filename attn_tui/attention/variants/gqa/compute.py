"""Grouped-query attention: H query heads share K key/value heads, a group of H/K query heads each.

    q = (x @ W_q.T).view(L, H, d_h).transpose(0, 1)     # (H, L, d_h)
    k = (x @ W_k.T).view(L, K, d_h).transpose(0, 1)     # (K, L, d_h): K key/value heads, H % K == 0
    v = (x @ W_v.T).view(L, K, d_h).transpose(0, 1)
    k, v = k.repeat_interleave(H // K, 0), v.repeat_interleave(H // K, 0)   # query head h reads h // (H/K)
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)   # as enable_gqa=True lays them out
    y = o.transpose(0, 1).reshape(L, H * d_h) @ W_o.T

Llama 2 70B, Llama 3, Mistral, Qwen and SmolLM2 use it: the keys and values are what a
decoder caches for every token, so caching K heads instead of H cuts that memory by H/K
while the queries keep all their heads. K = 1 is multi-query attention, K = H plain
multi-head. Laid out as `F.scaled_dot_product_attention(..., enable_gqa=True)` expects:
query head h reads key/value head h // (H/K).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import score_stages
from attn_tui.attention.variants.modifiers import gate, norm_qk, normed_scores, soft_cap
from attn_tui.attention.variants.scaled_dot.compute import scaled_pre, scaled_stages
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg, Plural
from attn_tui.trace.ops import Columns, Concat, Linear, Place
from attn_tui.trace.stage import Axis, Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def kv_map(heads: int, kv_heads: int) -> tuple[int, ...]:
    """The key/value head each query head reads: h // (heads / kv_heads), as repeat_interleave lays them out."""
    group = heads // kv_heads
    return tuple(h // group for h in range(heads))


def check_heads(heads: int, kv_heads: int, width: int) -> None:
    if heads < 1 or width % heads:
        raise ConfigError(Msg("--heads {heads} does not divide the model dimension {width}", heads=heads, width=width))
    if not 1 <= kv_heads <= heads or heads % kv_heads:
        raise ConfigError(Msg("--kv-heads {kv} must divide --heads {heads}: each key/value head serves an equal "
                              "group of query heads (1 = multi-query, {heads} = multi-head)", kv=kv_heads,
                              heads=heads))


def shared_formula(letter: str, h: int, group: int, kv: tuple[int, ...], span: str) -> Msg:
    """The formula of query head h's key or value: its group's key/value head, and who else reads it."""
    sharing = [n for n, g in enumerate(kv) if g == group]
    return Msg("{letter}_{h} = {letter}_proj[:, {span}]: key/value head {group}, shared by query heads {heads}",
               letter=letter, h=h, span=span, group=group, heads=", ".join(map(str, sharing)))


def _labels(prefix: str, heads: int, d_h: int) -> tuple[str, ...]:
    return tuple(f"{prefix}{h}.{i}" for h in range(heads) for i in range(d_h))


def run(ctx: Context, x: torch.Tensor, heads: int) -> None:
    n, d_model = x.shape
    kv_heads = ctx.settings.value("kv_heads")
    check_heads(heads, kv_heads, d_model)
    d_h = d_model // heads
    kv = kv_map(heads, kv_heads)
    trace, tokens = ctx.trace, ctx.query_axis
    ctx.describe(heads, kv_heads, kv)
    w_q = ctx.params.weight("W_q", heads * d_h, d_model)  # (H·d_h, d)
    w_k = ctx.params.weight("W_k", kv_heads * d_h, d_model)  # (K·d_h, d)
    w_v = ctx.params.weight("W_v", kv_heads * d_h, d_model)  # (K·d_h, d)
    w_o = ctx.params.weight("W_o", d_model, heads * d_h)  # (d, H·d_h)
    projected = {}
    for name, weight, count, letter in (("q_proj", w_q, heads, "q"), ("k_proj", w_k, kv_heads, "k"),
                                        ("v_proj", w_v, kv_heads, "v")):
        what = (Plural("{n} query head", "{n} query heads", n=count) if letter == "q"
                else Plural("{n} key/value head", "{n} key/value heads", n=count))
        formula = Plural("{upper} = X·W_{letter}ᵀ: {what} of {n} column each",
                         "{upper} = X·W_{letter}ᵀ: {what} of {n} columns each",
                         upper=letter.upper() + "_proj", letter=letter, what=what, n=d_h)
        full = trace.add(Stage(Place(name), x @ weight.T, formula,
                               (tokens, Axis("head.dim", _labels(letter, count, d_h))),
                               Linear(ctx.source, f"W_{letter}")))  # (N, count·d_h)
        projected[name] = full.view(n, count, d_h).transpose(0, 1)  # (count, N, d_h): views
    head_dims = dim_axis(d_h)
    for h in range(heads):
        span = f"{h * d_h}…{(h + 1) * d_h - 1}"
        trace.add(Stage(Place("query", head=h), projected["q_proj"][h],
                        Msg("Q_{h} = Q_proj[:, {span}]: query head {h}'s own columns", h=h, span=span),
                        (tokens, head_dims), Columns(Place("q_proj"), h * d_h)))
        g = kv[h]
        kv_span = f"{g * d_h}…{(g + 1) * d_h - 1}"
        for name, letter, source in (("key", "K", "k_proj"), ("value", "V", "v_proj")):
            trace.add(Stage(Place(name, head=h), projected[source][g], shared_formula(letter, h, g, kv, kv_span),
                            (ctx.key_axis, head_dims), Columns(Place(source), g * d_h)))
    queries, key_rows = norm_qk(ctx, projected["q_proj"], projected["k_proj"],
                                [Place("query", head=h) for h in range(heads)],
                                [Place("key", head=h) for h in range(heads)], kv)  # (H, N, d_h), (K, N, d_h)
    index = torch.tensor(kv, device=x.device)
    keys, values = key_rows[index], projected["v_proj"][index]  # (H, N, d_h): each head's group's
    stages, factor = scaled_stages(ctx.qk_axes, d_h)
    pre, stages, last = soft_cap(ctx, scaled_pre(queries, keys, factor), normed_scores(ctx, stages), "scaled")
    ctx.record_geometry(factor)
    outputs = score_stages(trace, ctx.tail, pre, stages, last, values, [Place("scores", head=h) for h in range(heads)],
                           [Place("value", head=h) for h in range(heads)], ctx.lazy)  # (H, N, d_h)
    outputs, name = gate(ctx, outputs, [Place("output", head=h) for h in range(heads)])
    concat = trace.add(Stage(Place("concat"), outputs.permute(1, 0, 2).reshape(n, heads * d_h),
                             Msg("C = [O_0 | O_1 | … ]: the query heads' outputs side by side"),
                             (tokens, dim_axis(heads * d_h)),
                             Concat(tuple(Place(name, head=h) for h in range(heads)))))  # (N, H·d_h)
    trace.add(Stage(Place("projected"), concat @ w_o.T, Msg("Y = C·W_oᵀ   (no biases, as in Llama)"),
                    (tokens, dim_axis(d_model)), Linear(Place("concat"), "W_o")))
