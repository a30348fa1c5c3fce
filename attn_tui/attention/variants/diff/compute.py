"""Differential attention (Ye et al. 2024, "Differential Transformer"; transformers' DiffLlama): one map minus another.

    q1, q2 = q.chunk(2, -1); k1, k2 = k.chunk(2, -1)            # (L, d), (S, d): halves of a head 2d wide
    a1 = softmax(q1 @ k1.T / sqrt(d)); a2 = softmax(q2 @ k2.T / sqrt(d))
    lam = exp(lq1 @ lk1) - exp(lq2 @ lk2) + lam_init            # lam_init = 0.8 - 0.6·exp(-0.3·depth)
    o = (a1 - lam * a2) @ v                                     # v keeps the head's whole width 2d
    y = (1 - lam_init) * rms_norm(o)

Both maps spend weight on tokens that match nothing in particular (the noise every softmax
must put somewhere); subtracting a second map cancels that common part, like a differential
amplifier, and what is left is sharper and can be negative. The per-head RMSNorm then puts
every head back on one scale, and (1 − λ_init) undoes the size λ_init took away.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.variants.diff import LambdaTerms
from attn_tui.attention.variants.diff.lazy import record_lazy
from attn_tui.attention.variants.diff.maps import (
    LAMBDA_NAMES,
    LAMBDA_STD,
    SUB,
    Halves,
    lambda_terms,
    record_concat,
    record_difference,
    record_maps,
)
from attn_tui.attention.variants.heads import heads_of
from attn_tui.attention.variants.modifiers import gate, norm_qk
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.trace.ops import Columns, Place
from attn_tui.trace.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    heads = heads_of(q, k, v)
    width = heads.q.shape[-1]
    if width % 2 or heads.k.shape[-1] != width:
        raise ConfigError(Msg("diff splits each head's query and key into two halves: a head's width must be even, "
                              "not {width} (choose --heads or --dim so that it is)", width=width))
    d = width // 2
    trace, at = ctx.trace, heads.scores_at
    for part, tensor, axis in (("query", heads.q, ctx.query_axis), ("key", heads.k, ctx.key_axis)):
        letter = part[0].upper()
        for n, offset in ((1, 0), (2, d)):
            for h, place in enumerate(at):
                trace.add(Stage(place.at(f"{part}_{n}"), tensor[h][:, offset:offset + d],
                                Msg("{letter}{sub} = {letter}[:, {a}…{b}]: half {n} of the head's columns",
                                    letter=letter, sub=SUB[n], n=n, a=offset, b=offset + d - 1),
                                (axis, dim_axis(d)), Columns(place.at(part), offset)))
    halves = _normed(ctx, Halves((heads.q[..., :d], heads.q[..., d:]), (heads.k[..., :d], heads.k[..., d:]),
                                 ("query_1", "query_2"), ("key_1", "key_2")), at)
    factor = 1 / math.sqrt(d)
    ctx.record_geometry(factor)
    cap = ctx.settings.softcap
    if cap is not None and (not math.isfinite(cap) or cap <= 0):
        raise ConfigError(Msg("--softcap must be a positive number, not {cap}", cap=f"{cap:g}"))
    depth = ctx.settings.value("depth")
    vectors = {name: ctx.params.normal(name, d, std=LAMBDA_STD) for name in LAMBDA_NAMES}  # (d,) each
    lam = lambda_terms(vectors, "", depth)
    op = LambdaTerms(*LAMBDA_NAMES, depth=depth)
    if ctx.lazy:  # a long input: both maps read by tiles
        normed = record_lazy(trace, ctx.tail, halves, at, factor, cap, lam, op, heads.v, heads.values_at)
    else:
        first, second = record_maps(trace, ctx.tail, halves, at, factor, cap)
        normed = record_difference(trace, ctx.tail, at, [(p.at("weights_1"), p.at("weights_2")) for p in at], lam,
                                   op, first, second, heads.v, heads.values_at)
    gated, name = gate(ctx, normed, [p.at("head_norm") for p in at])  # (heads, L, 2d)
    if heads.several:
        record_concat(trace, gated, at, ctx.query_axis, Place("concat"), "gated" if name == "gated" else "head_norm")


def _normed(ctx: Context, halves: Halves, at: list[Place]) -> Halves:
    """--qk-norm on each half's queries and keys (query_1_norm … key_2_norm), each half normed as a head of its
    own width d (rms) or all of them together, the whole projection (rms-all); the halves as they are without."""
    if ctx.settings.qk_norm == "none":
        return halves
    count, d = halves.q[0].shape[0], halves.q[0].shape[-1]
    rows = [(h, n) for h in range(count) for n in (1, 2)]  # head-major, as the projection's columns run

    def stacked(pair: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        return torch.stack(pair, dim=1).reshape(2 * count, -1, d)  # (2·heads, N, d): h0 half 1, h0 half 2, …

    def places(part: str, suffix: str = "") -> list[Place]:
        return [at[h].at(f"{part}_{n}{suffix}") for h, n in rows]

    q, k = norm_qk(ctx, stacked(halves.q), stacked(halves.k), places("query"), places("key"), range(2 * count),
                   places("query", "_norm"), places("key", "_norm"))
    q, k = q.view(count, 2, -1, d), k.view(count, 2, -1, d)  # (heads, 2, N, d)
    return Halves((q[:, 0], q[:, 1]), (k[:, 0], k[:, 1]), ("query_1_norm", "query_2_norm"),
                  ("key_1_norm", "key_2_norm"))
