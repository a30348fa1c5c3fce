"""Multi-head latent attention (MLA), DeepSeek-V2/V3: keys and values rebuilt from one small cached latent.

    q = rms_norm(x @ W_qa.T) @ W_qb.T                        # (L, H·(d_nope + d_rope)): the query's low-rank path
    c = rms_norm(x @ W_dkv.T); k_rope = rotate(x @ W_kr.T)   # all a decoder caches: c (L, r), k_rope (L, d_rope)
    k_nope, v = c @ W_uk[h].T, c @ W_uv[h].T                 # head h's key and value, rebuilt from c
    s = q_nope[h] @ k_nope.T + rotate(q_rope[h]) @ k_rope.T  # (L, L)
    o[h] = torch.softmax(s * scale + bias, dim=-1) @ v       # bias: 0 or -inf where the mask blocks
    y = torch.cat(list(o), -1) @ W_o.T

A decoder caches, for every token, only c (kv_rank numbers) and the shared rotary key (d_rope), instead of a key
and a value per head. The rotary part of q and k is kept apart from the latent because a rotation between c and
W_uk would stop W_uk from being folded into the query: the absorbed form (`--absorbed`) scores
(q_nope,h·W_uk,h)·cᵀ against the latent itself, and its weights equal the expanded form's.

The synthetic sizes follow DeepSeek-V3's proportions on a small width d with H heads: a head's no-position part
d/H wide, its rotary part half that (even, at least 2), the value d/H wide, q_rank = d/2 and kv_rank = d/4.
`record` is shared with the `deepseek_v3` family, so a model's layer is traced through the very same stages.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from attn_tui.attention.attend import PreStage, Tail, score_stages
from attn_tui.attention.variants.mla import Absorb, DotSum, LatentKeyScale, NormedAbsorb, NormedLatentScore
from attn_tui.attention.variants.modifiers import EPS as NORM_EPS
from attn_tui.attention.variants.modifiers import NORM_STD, gate, norm_qk, norm_rows, normed_scores, soft_cap
from attn_tui.attention.variants.rope.compute import angles, rotate
from attn_tui.attention.variants.scaled_dot.compute import SCALE_REASON
from attn_tui.errors import ConfigError
from attn_tui.i18n import NP_, Msg
from attn_tui.trace.lazy import PreTile
from attn_tui.trace.masks import softmax_dtype
from attn_tui.trace.ops import Columns, Concat, HeadNorm, Linear, Op, Operand, Place, Rotary, Scale
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

EPS = 1e-6  # the variant's RMSNorm epsilon (DeepSeek-V3's rms_norm_eps)


@dataclass(frozen=True)
class Latent:
    """One MLA layer's sizes and how it turns positions; its weights sit in `trace.params` under `prefix` + name.

    Names: W_qa, q_norm, W_qb (or W_q where the query has no low-rank path: q_rank 0), W_dkv, kv_norm, W_kr
    (the rotary key's rows of DeepSeek's kv_a_proj_with_mqa), W_uk and W_uv (kv_b_proj cut per part), and the
    biases b_qa, b_dkv, b_kr where the model has them.
    """

    heads: int
    d_nope: int
    d_rope: int
    d_v: int
    q_rank: int  # 0: the query is X·W_qᵀ, without the low-rank path (DeepSeek-V2-Lite)
    kv_rank: int
    scale: float
    base: float
    eps_q: float = EPS
    eps_kv: float = EPS
    absorbed: bool = False
    prefix: str = ""

    @property
    def d_qk(self) -> int:
        return self.d_nope + self.d_rope

    def cached(self) -> int:
        """Numbers cached per token: the latent and the shared rotary key."""
        return self.kv_rank + self.d_rope

    def plain(self) -> int:
        """Numbers plain multi-head attention with these heads would cache per token: every head's key and value."""
        return self.heads * (self.d_qk + self.d_v)


Turn = Callable[[torch.Tensor, Place, Place], tuple[torch.Tensor, Op, str | Msg]]  # rows, at, source → rotated


def sizes(d: int, heads: int) -> Latent:
    """The synthetic variant's sizes on a width d (see the module's docstring)."""
    if heads < 1 or d % heads:
        raise ConfigError(Msg("--heads {heads} does not divide the model dimension {d}", heads=heads, d=d))
    d_nope = d // heads
    return Latent(heads, d_nope, max(2, 2 * (d_nope // 4)), d_nope, max(1, d // 2), max(1, d // 4),
                  1 / math.sqrt(d_nope + max(2, 2 * (d_nope // 4))), 10000.0)


def rms(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """DeepSeek's RMSNorm over the last axis, in float32 (float64 stays float64), cast back."""
    wide = x.to(torch.promote_types(x.dtype, torch.float32))
    out = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps)
    return (weight.to(out.dtype) * out).to(x.dtype)


def rotate_half_turn(cos: torch.Tensor, sin: torch.Tensor, base: float, scaling: float = 1.0) -> Turn:
    """Llama's rotate-half on the rotary part, pairs (i, i + d_rope/2): the variant's, and a model's without
    interleaving. cos, sin (N, d_rope)."""
    def turn(x: torch.Tensor, at: Place, source: Place) -> tuple[torch.Tensor, Op, str | Msg]:
        letter = "q" if at.name.startswith("query") else "k"
        formula = Msg("{letter}_rot[p] = {letter}_rope[p] turned pair by pair (i, i + {half}) by the angle p·θ_i, "
                      "θ_i = {base}^(−2i/{d})", letter=letter, half=x.shape[-1] // 2, base=f"{base:g}",
                      d=x.shape[-1])
        return rotate(x, cos[:x.shape[0]], sin[:x.shape[0]]), Rotary(source, base, scaling), formula

    return turn


def _stage(trace: Trace, at: Place, data: torch.Tensor, formula: str | Msg, axes: tuple[Axis, ...], op: Op
           ) -> torch.Tensor:
    return trace.add(Stage(at, data, formula, axes, op))


def record(trace: Trace, m: Latent, x: torch.Tensor, source: Operand, tail: Tail, turn: Turn, layer: int | None,
           lazy: bool, ctx: Context | None = None, step: int | None = None,
           query_rows: tuple[int, Operand, Turn] | None = None) -> torch.Tensor:
    """Every stage of one MLA layer over x (N, d), from the query's path to each head's output (H, N, d_v).

    `source` names x for the projections' ops; `turn` rotates a rotary part; `layer` and `step` place the stages
    (None for the variant). `ctx` is the variant's context, whose --qk-norm and --softcap act here (a model's layer
    has neither: None). `query_rows` (first, operand, turn): only x's rows from `first` on query (a generation
    step's new token), named by their own operand and turned at their own positions, while every row is a key
    (what the cache holds)."""
    p = trace.params
    name = m.prefix.__add__
    heads = m.heads
    tokens, keys = tail.query_axis, tail.key_axis
    q_first, q_source, q_turn = query_rows if query_rows is not None else (0, source, turn)
    x_q = x[q_first:]  # (L, d): the rows that query
    n = x_q.shape[0]

    def at(stage: str, head: int | None = None) -> Place:
        return Place(stage, layer, head, step)

    # the query's low-rank path: down to q_rank, normed, up to every head's [no-position | rotary] part
    if m.q_rank:
        q_latent = _stage(trace, at("q_latent"), F.linear(x_q, p[name("W_qa")], p.get(name("b_qa"))),
                          Msg("c_q = X·W_qaᵀ: the query squeezed to {r} numbers a token", r=m.q_rank),
                          (tokens, dim_axis(m.q_rank)), Linear(q_source, name("W_qa"), _bias(p, name("b_qa"))))
        q_normed = _stage(trace, at("q_latent_norm"), rms(q_latent, p[name("q_norm")], m.eps_q),
                          Msg("ĉ_q = RMSNorm(c_q) · w over its {r} numbers", r=m.q_rank),
                          (tokens, dim_axis(m.q_rank)), HeadNorm(at("q_latent"), "rms", name("q_norm"), m.eps_q))
        q_source = at("q_latent_norm")
        q_weight, q_all, q_what = name("W_qb"), F.linear(q_normed, p[name("W_qb")]), "ĉ_q·W_qbᵀ"  # (N, H·d_qk)
    else:
        q_weight, q_all, q_what = name("W_q"), F.linear(x_q, p[name("W_q")]), "X·W_qᵀ"
    queries = q_all.view(n, heads, m.d_qk).transpose(0, 1)  # (H, N, d_qk)
    nope_axis, rope_axis = dim_axis(m.d_nope), dim_axis(m.d_rope)
    q_rot = []
    for h in range(heads):
        _stage(trace, at("query", h), queries[h],
               Msg("q_{h} = {what}, rows {a}…{b}: head {h}'s no-position and rotary parts", h=h, what=q_what,
                   a=h * m.d_qk, b=(h + 1) * m.d_qk - 1), (tokens, dim_axis(m.d_qk)),
               Linear(q_source, q_weight, None, h * m.d_qk))
        _stage(trace, at("query_nope", h), queries[h, :, :m.d_nope],
               Msg("q_nope = q[:, 0…{last}]: the part that meets the latent's keys, no position in it",
                   last=m.d_nope - 1), (tokens, nope_axis), Columns(at("query", h), 0))
        _stage(trace, at("query_rope", h), queries[h, :, m.d_nope:],
               Msg("q_rope = q[:, {first}…{last}]: the part that will carry the position", first=m.d_nope,
                   last=m.d_qk - 1), (tokens, rope_axis), Columns(at("query", h), m.d_nope))
        turned, op, formula = q_turn(queries[h, :, m.d_nope:], at("query_rot", h), at("query_rope", h))
        q_rot.append(_stage(trace, at("query_rot", h), turned, formula, (tokens, rope_axis), op))
    q_rope = torch.stack(q_rot)  # (H, N, d_rope)

    # the key/value latent (the cache) and the one rotary key every head shares
    c_kv = _stage(trace, at("kv_latent"), F.linear(x, p[name("W_dkv")], p.get(name("b_dkv"))),
                  Msg("c_kv = X·W_dkvᵀ: keys and values of every head squeezed to {r} numbers a token", r=m.kv_rank),
                  (keys, dim_axis(m.kv_rank)), Linear(source, name("W_dkv"), _bias(p, name("b_dkv"))))
    latent = _stage(trace, at("kv_latent_norm"), rms(c_kv, p[name("kv_norm")], m.eps_kv),
                    Msg("ĉ_kv = RMSNorm(c_kv) · w: what the cache holds for every token"),
                    (keys, dim_axis(m.kv_rank)), HeadNorm(at("kv_latent"), "rms", name("kv_norm"), m.eps_kv))
    k_raw = _stage(trace, at("key_rope"), F.linear(x, p[name("W_kr")], p.get(name("b_kr"))),
           Msg("k_rope = X·W_krᵀ: one rotary key of {d} numbers, shared by all {heads} heads", d=m.d_rope,
               heads=heads), (keys, rope_axis), Linear(source, name("W_kr"), _bias(p, name("b_kr"))))
    k_turned, op, formula = turn(k_raw, at("key_rot"), at("key_rope"))
    k_rope = _stage(trace, at("key_rot"), k_turned, formula, (keys, rope_axis), op)  # (N, d_rope)
    item = latent.element_size()
    _stage(trace, at("latent_cache"), torch.cat([latent, k_rope], dim=-1), Msg(
        "cache[t] = [ĉ_kv | k_rot]: {r} + {d} = {n} numbers ({bytes} bytes) a token; multi-head attention with "
        "these {heads} heads would cache a key and a value per head, {plain} numbers ({plain_bytes} bytes): "
        "{ratio}× as much", r=m.kv_rank, d=m.d_rope, n=m.cached(), bytes=m.cached() * item, heads=heads,
        plain=m.plain(), plain_bytes=m.plain() * item, ratio=f"{m.plain() / m.cached():.3g}"),
           (keys, Axis(NP_("axis", "cached"),
                       tuple(f"c{i}" for i in range(m.kv_rank)) + tuple(f"r{i}" for i in range(m.d_rope)))),
           Concat((at("kv_latent_norm"), at("key_rot"))))  # columns: the latent's c…, then the rotary key's r…

    # values (and, unless absorbed, keys) expanded from the latent, per head
    values = F.linear(latent, p[name("W_uv")]).view(-1, heads, m.d_v).transpose(0, 1)  # (H, N, d_v)
    w_uk = p[name("W_uk")].view(heads, m.d_nope, m.kv_rank)  # (H, d_nope, r)
    for h in range(heads):
        _stage(trace, at("value", h), values[h], Msg("v_{h} = ĉ_kv·W_uvᵀ, rows {a}…{b}: head {h}'s values rebuilt "
                                                     "from the latent", h=h, a=h * m.d_v, b=(h + 1) * m.d_v - 1),
               (keys, dim_axis(m.d_v)), Linear(at("kv_latent_norm"), name("W_uv"), None, h * m.d_v))
    q_nope = queries[:, :, :m.d_nope]  # (H, N, d_nope)
    norm_absorbed = m.absorbed and ctx is not None and ctx.settings.qk_norm != "none"
    if m.absorbed:
        left = q_nope @ w_uk  # (H, N, r): W_uk folded into the query
        for h in range(heads if not norm_absorbed else 0):  # with a QK-norm: folded after the norm, below
            _stage(trace, at("query_absorbed", h), left[h], Msg(
                "q_abs = q_nope·W_uk,{h}: head {h}'s rows {a}…{b} of W_uk folded into the query, so it meets the "
                "cached latent itself", h=h, a=h * m.d_nope, b=(h + 1) * m.d_nope - 1),
                   (tokens, dim_axis(m.kv_rank)), Absorb(at("query_nope", h), name("W_uk"), h * m.d_nope))
        right = latent[None].expand(heads, -1, -1)  # (H, N, r)
        first = ("query_absorbed", "kv_latent_norm", False)  # q_abs against the latent itself (no head)
        formula = Msg("S = q_abs·ĉ_kvᵀ + q_rot·k_rotᵀ: the latent scored directly, the keys never expanded")
    else:
        right = latent @ w_uk.transpose(1, 2)  # (H, N, d_nope)
        for h in range(heads):
            _stage(trace, at("key_nope", h), right[h], Msg(
                "k_nope = ĉ_kv·W_ukᵀ, rows {a}…{b}: head {h}'s key rebuilt from the latent", h=h, a=h * m.d_nope,
                b=(h + 1) * m.d_nope - 1), (keys, nope_axis), Linear(at("kv_latent_norm"), name("W_uk"), None,
                                                                     h * m.d_nope))
            _stage(trace, at("key", h), torch.cat([right[h], k_rope], dim=-1),
                   Msg("k_{h} = [k_nope | k_rot]: head {h}'s own no-position part and the shared rotary key", h=h),
                   (keys, dim_axis(m.d_qk)), Concat((at("key_nope", h), at("key_rot"))))
        left = q_nope
        first = ("query_nope", "key_nope", True)  # each head's own rebuilt key
        formula = Msg("S = q_nope·k_nopeᵀ + q_rot·k_rotᵀ: what the tokens say plus where they are")
    query_all = torch.cat([left, q_rope], dim=-1)  # (H, N, r or d_nope, + d_rope)
    key_all = torch.cat([right, k_rope[None].expand(heads, -1, -1)], dim=-1)
    factor = m.scale
    if ctx is not None and norm_absorbed:
        q_abs, q_wrot, key_scale = _norm_absorbed(ctx, m, torch.cat([q_nope, q_rope], dim=-1), latent, k_rope, at)

        def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
            scores = (q_abs[:, rows] @ latent[cols].T + q_wrot[:, rows] @ k_rope[cols].T) * key_scale[:, None, cols]
            return {"scores": scores, "scaled": scores * factor}  # (H, rows, cols) each
    else:
        if ctx is not None and ctx.settings.qk_norm != "none":
            query_all, key_all = _norm_heads(ctx, m, query_all, key_all, at)  # (H, N, d_qk) each

        def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
            scores = query_all[:, rows] @ key_all[:, cols].transpose(-2, -1)  # (H, rows, cols)
            return {"scores": scores, "scaled": scores * factor}

    qk = (tokens, keys)

    def pairs(s: Place) -> DotSum:
        """The score's two products: the first pair (per head or against the latent), then the rotary parts."""
        right_at = s.at(first[1]) if first[2] else at(first[1])
        return DotSum(((s.at(first[0]), right_at), (s.at("query_rot"), at("key_rot"))))

    usual = 1 / math.sqrt(m.d_qk)
    scaled = (Msg("S' = S · {scale}   (1/√(d_nope + d_rope) = 1/√{d})", scale=f"{factor:.4g}", d=m.d_qk)
              if math.isclose(factor, usual, rel_tol=1e-9) else
              Msg("S' = S · {scale}   (the model's own scaling, not 1/√{d} = {usual}: YaRN's mscale)",
                  scale=f"{factor:.4g}", d=m.d_qk, usual=f"{usual:.4g}"))
    whole = ctx is not None and ctx.settings.qk_norm == "rms-all"

    def latent_score(s: Place) -> NormedLatentScore:
        """The absorbed form's normed score: the key's norm factor on both products (see _norm_absorbed)."""
        head = s.head or 0
        return NormedLatentScore(s.at("query_absorbed"), at("kv_latent_norm"), s.at("query_norm"), "k_head_norm",
                                 head * m.d_qk if whole else 0, m.d_nope, at("key_rot"),
                                 at("key_scale") if whole else at("key_scale", head))

    score = (PreStage("scores", Msg("S = r_k·(q_abs·ĉ_kvᵀ + (q_n,rot ⊙ w_k)·k_rotᵀ): the normed key's size r_k found "
                                    "from the latent, the keys never expanded"), qk, latent_score)
             if norm_absorbed else PreStage("scores", formula, qk, pairs))
    stages = [score, PreStage("scaled", scaled, qk, lambda s: Scale(s.at("scores"), factor, SCALE_REASON))]
    read: PreTile = pre
    last = "scaled"
    if ctx is not None:
        read, stages, last = soft_cap(ctx, pre, stages if norm_absorbed else normed_scores(ctx, stages), last)
    return score_stages(trace, tail, read, stages, last, values, [at("scores", h) for h in range(heads)],
                        [at("value", h) for h in range(heads)], lazy)


def _norm_heads(ctx: Context, m: Latent, query_all: torch.Tensor, key_all: torch.Tensor,
                at: Callable[[str, int | None], Place]) -> tuple[torch.Tensor, torch.Tensor]:
    """--qk-norm on every head's whole query and key, [no-position | rotary] as the scores read them.

    query_all, key_all (H, N, d_qk). The query is first put back together as `query_full` (the key already is:
    `key`), with weights q_head_norm and k_head_norm (q_norm is the query latent's). RMS is blind to the rotation
    (it keeps each pair's length), so only where the weight meets each dimension depends on norming after the
    turn. The absorbed form never builds the keys: it norms them through the latent (_norm_absorbed)."""
    heads = m.heads
    _query_full(ctx, m, query_all, at)
    return norm_qk(ctx, query_all, key_all, [at("query_full", h) for h in range(heads)],
                   [at("key", h) for h in range(heads)], range(heads), weights=("q_head_norm", "k_head_norm"))


def _query_full(ctx: Context, m: Latent, queries: torch.Tensor, at: Callable[[str, int | None], Place]) -> None:
    """Each head's whole query [q_nope | q_rot] (H, N, d_qk) as a stage: what a QK-norm norms."""
    for h in range(m.heads):
        ctx.trace.add(Stage(at("query_full", h), queries[h],
                            Msg("q_{h} = [q_nope | q_rot]: head {h}'s whole query as the scores read it", h=h),
                            (ctx.query_axis, dim_axis(m.d_qk)), Concat((at("query_nope", h), at("query_rot", h)))))


def _norm_absorbed(ctx: Context, m: Latent, queries: torch.Tensor, latent: torch.Tensor, k_rot: torch.Tensor,
                   at: Callable[[str, int | None], Place]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """--qk-norm in the absorbed form, keys never expanded. queries (H, N, d_qk), latent (N, r), k_rot (N, d_rope).

    The normed key is r_j·[ĉ_j·W_uk,hᵀ | k_rot,j] ⊙ w_k. Its weight w_k moves to the query (elementwise, then
    through W_uk like the plain absorbed form), and its RMS factor r_j needs only the key's size, which the latent
    gives without the key: ‖ĉ_j·W_uk,hᵀ‖² = ĉ_j·(W_uk,hᵀW_uk,h)·ĉ_j, an r × r Gram matrix per head (rms-all: of
    every head's rows, one factor for all). Returns q_abs (H, N, r), the weighted rotary query (H, N, d_rope) and
    r (H, N)."""
    heads, dn, dq, r = m.heads, m.d_nope, m.d_qk, m.kv_rank
    whole = ctx.settings.qk_norm == "rms-all"
    _query_full(ctx, m, queries, at)
    q_n = norm_rows(ctx, queries, "query", [at("query_full", h) for h in range(heads)], "q_head_norm")  # (H, N, dq)
    w_k = ctx.params.ones_near("k_head_norm", heads * dq if whole else dq, NORM_STD)  # (width,)
    w_uk = ctx.trace.params["W_uk"]  # (H·dn, r)
    trace, tokens, keys = ctx.trace, ctx.query_axis, ctx.key_axis
    absorbed, turned = [], []
    for h in range(heads):
        col = h * dq if whole else 0
        absorbed.append(trace.add(Stage(
            at("query_absorbed", h), (q_n[h][:, :dn] * w_k[col:col + dn]) @ w_uk[h * dn:(h + 1) * dn],
            Msg("q_abs = (q_n,nope ⊙ w_k)·W_uk,{h}: the key norm's weight and head {h}'s rows {a}…{b} of W_uk moved "
                "into the normed query", h=h, a=h * dn, b=(h + 1) * dn - 1), (tokens, dim_axis(r)),
            NormedAbsorb(at("query_norm", h), "k_head_norm", col, "W_uk", h * dn, dn))))
        turned.append(q_n[h][:, dn:] * w_k[col + dn:col + dq])  # (N, d_rope)
    wide = latent.to(softmax_dtype(latent.dtype))
    rot_sq = k_rot.to(wide.dtype).pow(2).sum(-1)  # (N,)
    spans = [(0, heads * dn)] if whole else [(h * dn, (h + 1) * dn) for h in range(heads)]
    factors = []
    for first, last in spans:
        rows = w_uk[first:last].to(wide.dtype)  # (rows, r)
        content = ((wide @ (rows.T @ rows)) * wide).sum(-1)  # (N,): ĉ·G·ĉ, the rebuilt key's squared size
        copies = heads if whole else 1
        scale = torch.rsqrt((content + copies * rot_sq) / (last - first + copies * m.d_rope) + NORM_EPS)
        place = at("key_scale", None) if whole else at("key_scale", first // dn)
        factors.append(trace.add(Stage(
            place, scale.to(latent.dtype)[:, None],
            Msg("r_k = 1/√(mean of k² + eps), k = [ĉ_kv·W_ukᵀ | k_rot] ({n} numbers): its size from ĉ·(W_ukᵀW_uk)·ĉ, "
                "the key never built", n=last - first + copies * m.d_rope), (keys, Axis("scale", ("r",))),
            LatentKeyScale(at("kv_latent_norm", None), at("key_rot", None), "W_uk", first, last, copies,
                           NORM_EPS)))[:, 0])
    key_scale = torch.stack(factors).expand(heads, -1)  # (H, N)
    return torch.stack(absorbed), torch.stack(turned), key_scale


def _bias(params: dict[str, torch.Tensor], name: str) -> str | None:
    return name if name in params else None


def run(ctx: Context, x: torch.Tensor, heads: int) -> None:
    n, d = x.shape
    m = replace(sizes(d, heads), absorbed=ctx.settings.value("absorbed"), base=ctx.settings.value("rope_base"))
    ctx.describe(heads)
    params = ctx.params
    params.weight("W_qa", m.q_rank, d)
    params.weight("W_qb", heads * m.d_qk, m.q_rank)
    params.weight("W_dkv", m.kv_rank, d)
    params.weight("W_kr", m.d_rope, d)
    params.weight("W_uk", heads * m.d_nope, m.kv_rank)
    params.weight("W_uv", heads * m.d_v, m.kv_rank)
    for norm, width in (("q_norm", m.q_rank), ("kv_norm", m.kv_rank)):  # near 1, as a trained norm's weight is
        params.record[norm] = 1 + params.normal(norm, width, std=0.1)
    w_o = params.weight("W_o", d, heads * m.d_v)  # (d, H·d_v)
    cos, sin = angles(n, m.d_rope, m.base, x.dtype, x.device)  # (N, d_rope)
    ctx.record_geometry(m.scale)
    outputs = record(ctx.trace, m, x, ctx.source, ctx.tail, rotate_half_turn(cos, sin, m.base), None, ctx.lazy,
                     ctx)  # (H, N, d_v)
    outputs, name = gate(ctx, outputs, [Place("output", head=h) for h in range(heads)])
    tokens = ctx.query_axis
    concat = ctx.trace.add(Stage(Place("concat"), outputs.permute(1, 0, 2).reshape(n, heads * m.d_v),
                                 Msg("C = [O_0 | O_1 | … ]: the heads' outputs side by side"),
                                 (tokens, dim_axis(heads * m.d_v)),
                                 Concat(tuple(Place(name, head=h) for h in range(heads)))))  # (N, H·d_v)
    ctx.trace.add(Stage(Place("projected"), concat @ w_o.T, Msg("Y = C·W_oᵀ   (no biases, as in DeepSeek-V3)"),
                        (tokens, dim_axis(d)), Linear(Place("concat"), "W_o")))
