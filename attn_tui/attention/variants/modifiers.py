"""QK-norm, a logit soft cap and the output gate: what any score-based variant may add to its plain formula.

    q, k = rms(q) * w_q, rms(k) * w_k            # --qk-norm rms (each head) | rms-all (the whole projection)
    s = cap * tanh((q @ k.T * scale) / cap)      # --softcap C (Gemma 2), before the mask
    o = softmax(mask(s)) @ v
    o = o * sigmoid(x @ W_g.T)                   # --gate (Qwen3-Next's gated attention), before concat and W_o

Each is a stage of its own (query_norm and key_norm, capped, gate and gated) recorded with the
op the inspector recomputes (HeadNorm, SoftCap, SigmoidGate, GateProduct), so a variant with
a model family's weights copied in traces as that family does (Qwen3 and Gemma 3 norm each head,
OLMo-2 the whole projection, Gemma 2 caps). The norm weights and W_g are seeded like every
learned parameter and kept in the trace's parameters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.trace.catalog import symbol
from attn_tui.trace.lazy import PreTile
from attn_tui.trace.masks import softmax_dtype
from attn_tui.trace.ops import Dot, GateProduct, HeadNorm, Op, Place, SigmoidGate, SoftCap
from attn_tui.trace.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

EPS = 1e-6  # the norms' epsilon, Qwen3's and Gemma 3's rms_norm_eps
NORM_STD = 0.1  # a seeded norm weight is 1 + N(0, 0.1²): near the ones a model starts from, not all ones


def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float = EPS) -> torch.Tensor:
    """x (…, d) / √(mean of its squares over d + eps) · weight (d,), in at least float32, returned in x's dtype."""
    wide = x.to(softmax_dtype(x.dtype))
    out = wide * torch.rsqrt(wide.pow(2).mean(-1, keepdim=True) + eps) * weight.to(wide.dtype)
    return out.to(x.dtype)


def norm_qk(ctx: Context, q: torch.Tensor, k: torch.Tensor, q_at: Sequence[Place], k_at: Sequence[Place],
            k_index: Sequence[int], q_to: Sequence[Place] = (), k_to: Sequence[Place] = (),
            weights: tuple[str, str] = ("q_norm", "k_norm")) -> tuple[torch.Tensor, torch.Tensor]:
    """query_norm and key_norm of every head, when --qk-norm asks; returns q and k as the scores read them.

    q (H, L, d_h) with `q_at[h]` head h's query stage; k (rows, S, d_h) the distinct key heads, head h reading
    row `k_index[h]` through its key stage `k_at[h]` (a grouped-query run shares a row among a group).
    rms norms each row over its head's d_h dimensions with one weight (d_h,) shared by the heads; rms-all
    norms each token's whole projection (every head's dimensions side by side) with one weight over all of them.
    `q_to`, `k_to` place the normed stages (empty: query_norm and key_norm at each reader's place; differential
    attention names each half's own); `weights` names the two norm weights (MLA's q_norm is its latent's).
    """
    kind = ctx.settings.qk_norm
    if kind == "none":
        return q, k
    q_n = _record_norm(ctx, q, "query", q_at, list(range(len(q_at))), kind == "rms-all",
                       q_to or [at.at("query_norm") for at in q_at], weights[0])
    k_n = _record_norm(ctx, k, "key", k_at, k_index, kind == "rms-all", k_to or [at.at("key_norm") for at in k_at],
                       weights[1])
    return q_n, k_n


def norm_rows(ctx: Context, x: torch.Tensor, name: str, at: Sequence[Place], weight: str) -> torch.Tensor:
    """--qk-norm on one side alone, x (H, N, d_h) read at `at[h]`: MLA's absorbed query, whose key is normed
    through the latent instead (attention/variants/mla/compute.py)."""
    return _record_norm(ctx, x, name, at, list(range(len(at))), ctx.settings.qk_norm == "rms-all",
                        [place.at(f"{name}_norm") for place in at], weight)


def _record_norm(ctx: Context, x: torch.Tensor, name: str, at: Sequence[Place], index: Sequence[int],
                 whole: bool, to: Sequence[Place], weight_name: str) -> torch.Tensor:
    rows, n, d_h = x.shape
    letter = name[0]
    width = rows * d_h if whole else d_h
    weight = ctx.params.ones_near(weight_name, width, NORM_STD)  # (width,)
    readers: tuple[Place, ...] = ()
    if whole:
        joined = x.transpose(0, 1).reshape(n, rows * d_h)  # (N, rows·d_h): the projection before the split
        normed = rms_norm(joined, weight).view(n, rows, d_h).transpose(0, 1)  # (rows, N, d_h)
        first = {row: h for h, row in reversed(list(enumerate(index)))}  # each row's first reading head
        readers = tuple(at[first[row]] for row in range(rows))
        formula = Msg("{letter}_n = RMSNorm over the whole projection's {d} dimensions ({rows} heads side by side), "
                      "times the seeded weight {weight}", letter=letter.upper(), d=width, rows=rows,
                      weight=weight_name)
    else:
        normed = rms_norm(x, weight)  # (rows, N, d_h)
        formula = Msg("{letter}_n = RMSNorm({letter}) over the head's {d} dimensions, times the seeded weight "
                      "{weight}", letter=letter.upper(), d=d_h, weight=weight_name)
    axis = ctx.query_axis if name == "query" else ctx.key_axis
    for h, (place, normed_at) in enumerate(zip(at, to, strict=True)):
        row = index[h]
        op = HeadNorm(place, "rms", weight_name, EPS, whole=readers, column=row * d_h if whole else 0)
        ctx.trace.add(Stage(normed_at, normed[row], formula, (axis, dim_axis(d_h)), op))
    return normed


def normed_scores(ctx: Context, stages: list[PreStage], q_name: str = "query_norm",
                  k_name: str = "key_norm") -> list[PreStage]:
    """The score stages with `scores` reading the normed q and k (when --qk-norm asks), the rest as they were."""
    if ctx.settings.qk_norm == "none":
        return stages
    read = PreStage("scores", Msg("S = Q_n·K_nᵀ: S[i,j] = q_n,i·k_n,j   (the normed query and key)"), ctx.qk_axes,
                    lambda at: Dot(at.at(q_name), at.at(k_name)))
    return [read if stage.name == "scores" else stage for stage in stages]


def soft_cap(ctx: Context, pre: PreTile, stages: list[PreStage], last: str
             ) -> tuple[PreTile, list[PreStage], str]:
    """`capped` = C·tanh(last / C) after the last stage before the mask, when --softcap C asks; else as given."""
    cap = ctx.settings.softcap
    if cap is None:
        return pre, stages, last
    if not math.isfinite(cap) or cap <= 0:
        raise ConfigError(Msg("--softcap must be a positive number, not {cap}", cap=f"{cap:g}"))

    def capped(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        tiles = pre(rows, cols)
        wide = tiles[last].to(softmax_dtype(tiles[last].dtype))  # float16 cannot hold a cap beyond 65504
        return {**tiles, "capped": torch.tanh(wide / cap) * cap}  # (heads, rows, cols)

    def op(at: Place) -> Op:
        return SoftCap(at.at(last), cap)

    stage = PreStage("capped", Msg("S_cap = {cap}·tanh({source} / {cap}): every score kept inside ±{cap} before "
                                   "the mask", cap=f"{cap:g}", source=symbol(last)), ctx.qk_axes, op)
    return capped, [*stages, stage], "capped"


def gate(ctx: Context, outputs: torch.Tensor, out_at: Sequence[Place]) -> tuple[torch.Tensor, str]:
    """gate = σ(X·W_gᵀ) and gated = output ⊙ gate for every head, when --gate asks; returns what is handed on
    (outputs (H, L, d_v), gated or not) and its stage name. W_g is (H·d_v, d): head h owns rows h·d_v …"""
    if not ctx.settings.gate:
        return outputs, "output"
    if ctx.source not in ctx.trace.inputs and not isinstance(ctx.source, Place):
        raise ConfigError(Msg("--gate does not apply to typed Q, K, V: the gate σ(X·W_g) is computed from the "
                              "token vectors (give --text or --x)"))
    x = ctx.trace.operand(ctx.source)  # (N, d)
    heads, n, d_v = outputs.shape
    w_g = ctx.params.weight("W_g", heads * d_v, x.shape[1])  # (H·d_v, d)
    gates = torch.sigmoid(x @ w_g.T).view(n, heads, d_v).transpose(0, 1)  # (H, N, d_v): views
    gated = outputs * gates.to(outputs.dtype)  # (H, L, d_v)
    several = out_at[0].head is not None
    dims = dim_axis(d_v)
    for h, at in enumerate(out_at):
        formula = (Msg("G_{h} = σ(X·W_gᵀ), columns {span}: head {h}'s gate, one number in (0, 1) per query and "
                       "dimension", h=h, span=f"{h * d_v}…{(h + 1) * d_v - 1}") if several
                   else Msg("G = σ(X·W_gᵀ): one number in (0, 1) per query and dimension, from the token itself"))
        ctx.trace.add(Stage(at.at("gate"), gates[h], formula, (ctx.query_axis, dims),
                            SigmoidGate(ctx.source, "W_g", h * d_v)))
        ctx.trace.add(Stage(at.at("gated"), gated[h], Msg("O_g = O ⊙ G: the weighted sum let through by the gate, "
                                                          "element by element"), (ctx.query_axis, dims),
                            GateProduct(at, at.at("gate"))))
    return gated, "gated"
