"""Differential attention's parts, shared by the variant (compute.py, lazy.py) and the DiffLlama family: λ from
its four vectors, the two maps' stages, their difference, each head's norm and the heads side by side."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage, warn_empty_rows
from attn_tui.attention.variants.diff import DiffNorm, DiffWeights, LambdaTerms
from attn_tui.i18n import N_, Msg
from attn_tui.trace import masks
from attn_tui.trace.lazy import LazyTensor
from attn_tui.trace.ops import Concat, Dot, Masking, Place, Scale, SoftCap, Softmax, WeightedSum
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.attend import Tail
LAMBDA_STD = 0.1  # DiffLlama's lambda_std_dev: λ's four vectors start near zero, so λ starts near λ_init
EPS = 1e-5  # the head norm's eps (DiffLlama's rms_norm_eps)
LAMBDA_ROW = Axis("lambda", ("λ",))
LAMBDA_TERMS = Axis("term", ("exp₁", "exp₂", "λ_init", "λ"))  # exp(λ_q1·λ_k1), exp(λ_q2·λ_k2)
LAMBDA_NAMES = ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2")
MAPS = (1, 2)  # the two softmax maps of every head
SUB = {1: "₁", 2: "₂"}  # the maps' subscripts (a head's are _h: Q_1 is head 1's query, Q₁ a head's first half)
HALF_REASON = N_("each half is scaled as a head of its own width d would be")


def lambda_init(depth: int) -> float:
    """λ_init of the layer at `depth` (counted from 0): 0.2 at the first layer, rising towards 0.8 deeper."""
    return 0.8 - 0.6 * math.exp(-0.3 * depth)


def lambda_terms(vectors: dict[str, torch.Tensor], prefix: str, depth: int) -> torch.Tensor:
    """(1, 4): exp(λq1·λk1), exp(λq2·λk2), λ_init, λ, in float32 as DiffLlama sums them (float64 stays)."""
    q1, k1, q2, k2 = (vectors[prefix + name] for name in LAMBDA_NAMES)
    dtype = masks.softmax_dtype(q1.dtype)
    one = torch.exp(torch.sum(q1.to(dtype) * k1.to(dtype)))
    two = torch.exp(torch.sum(q2.to(dtype) * k2.to(dtype)))
    init = torch.tensor(lambda_init(depth), dtype=dtype, device=q1.device)
    return torch.stack([one, two, init, one - two + init])[None]  # (1, 4)


@dataclass(frozen=True)
class Halves:
    """The two halves of every head: q_n (heads, L, d), k_n (heads, S, d), and the stages each score reads."""

    q: tuple[torch.Tensor, torch.Tensor]
    k: tuple[torch.Tensor, torch.Tensor]
    query: tuple[str, str]  # the stages the scores read: query_1, query_2 (or a model's rotated heads)
    key: tuple[str, str]


def masked_formula(n: int, tail: Tail, capped: bool = False) -> Msg:
    sub = SUB[n]
    read = f"S_cap{sub}" if capped else f"S'{sub}"
    scaled = read if tail.temperature == 1 else f"{read} / T (T = {tail.temperature:g})"
    if tail.mask is None:
        return Msg("M{n} = {scaled}   (no mask)", n=sub, scaled=scaled)
    return Msg("M{n} = {scaled} where mask = 1, {fill} where mask = 0   (mask: {mask}; 1 = may attend)", n=sub,
               scaled=scaled, fill=tail.fill.replace("inf", "∞"), mask=tail.mask.describe())


def map_stages(tail: Tail, halves: Halves, n: int, factor: float, cap: float | None) -> list[PreStage]:
    """Map n's stages in order (scores_n, scaled_n, capped_n where --softcap asks, masked_n, weights_n), each with
    its formula and its op given the head's place: one declaration for the whole and the lazy path."""
    qk = (tail.query_axis, tail.key_axis)
    d = halves.q[0].shape[-1]
    query, key, sub = halves.query[n - 1], halves.key[n - 1], SUB[n]
    formula = (Msg("S{n} = Q{n}·K{n}ᵀ: S{n}[i,j] = q{n},i·k{n},j", n=sub) if query == f"query_{n}" else
               Msg("S{n} = Q{n},n·K{n},nᵀ: the normed halves, S{n}[i,j] = q{n},i·k{n},j", n=sub))
    before = f"scaled_{n}" if cap is None else f"capped_{n}"
    stages = [PreStage(f"scores_{n}", formula, qk, lambda at: Dot(at.at(query), at.at(key))),
              PreStage(f"scaled_{n}", f"S'{sub} = S{sub} / √d   (d = {d}, √d = {math.sqrt(d):.4g})", qk,
                       lambda at: Scale(at.at(f"scores_{n}"), factor, HALF_REASON))]
    if cap is not None:
        stages.append(PreStage(f"capped_{n}", Msg("S_cap{n} = {cap}·tanh(S'{n} / {cap}): map {k}'s scores kept "
                                                  "inside ±{cap} before its mask", n=sub, k=n, cap=f"{cap:g}"), qk,
                               lambda at: SoftCap(at.at(f"scaled_{n}"), cap)))
    return [*stages,
            PreStage(f"masked_{n}", masked_formula(n, tail, cap is not None), qk,
                     lambda at: Masking(at.at(before), tail.mask, tail.fill, tail.temperature)),
            PreStage(f"weights_{n}", Msg("A{n} = softmax(M{n}) over keys: each row sums to 1", n=sub), qk,
                     lambda at: Softmax(at.at(f"masked_{n}")))]


def map_tiles(halves: Halves, factor: float, cap: float | None, rows: slice, cols: slice
              ) -> dict[str, torch.Tensor]:
    """Both maps' stages before the mask on rows × cols, every head: (heads, rows, cols) each."""
    out = {}
    for n in (1, 2):
        scores = halves.q[n - 1][:, rows] @ halves.k[n - 1][:, cols].transpose(-2, -1)  # (heads, rows, cols)
        scaled = scores * factor
        out[f"scores_{n}"], out[f"scaled_{n}"] = scores, scaled
        if cap is not None:  # in at least float32: float16 cannot hold a large cap
            out[f"capped_{n}"] = torch.tanh(scaled.to(masks.softmax_dtype(scaled.dtype)) / cap) * cap
    return out


def record_maps(trace: Trace, tail: Tail, halves: Halves, at: list[Place], factor: float,
                cap: float | None = None) -> list[torch.Tensor]:
    """scores_n, scaled_n, masked_n and weights_n (n = 1, 2) of every head at `at`; returns weights_1, weights_2.

    With a soft `cap` (--softcap) each map's scaled scores pass through capped_n = cap·tanh(S'_n / cap) before
    its mask, so both softmaxes read capped scores."""
    allowed = None if tail.mask is None else tail.mask.allowed
    tiles = map_tiles(halves, factor, cap, slice(None), slice(None))
    out = []
    for n in (1, 2):
        read = tiles[f"capped_{n}" if cap is not None else f"scaled_{n}"]
        promoted = read.to(masks.softmax_dtype(read.dtype))
        divided = promoted / tail.temperature if tail.temperature != 1 else promoted
        tiles[f"masked_{n}"] = masks.apply_mask(divided, allowed, tail.fill)  # (heads, L, S)
        tiles[f"weights_{n}"] = masks.masked_softmax(tiles[f"masked_{n}"], allowed)  # (heads, L, S)
        stages = map_stages(tail, halves, n, factor, cap)
        for h, place in enumerate(at):
            for stage in stages:
                trace.add(Stage(place.at(stage.name), tiles[stage.name][h], stage.formula, stage.axes,
                                stage.op(place)))
        out.append(tiles[f"weights_{n}"])
    warn_empty_rows(trace, tail)
    return out


def record_difference(trace: Trace, tail: Tail, at: list[Place], maps: list[tuple[Place, Place]],
                      lam: torch.Tensor, op: LambdaTerms, first: torch.Tensor, second: torch.Tensor,
                      values: torch.Tensor, value_at: list[Place], eps: float = EPS) -> torch.Tensor:
    """lambda, diff_weights, diff_output and head_norm of every head at `at`; returns head_norm (heads, L, 2d).

    `first`, `second` (heads, L, S) are the two maps, recorded for head h at `maps[h]` (its own weights_1 and
    weights_2, or a model's two heads); `lam` (1, 4) as `lambda_terms` makes it; `values` (heads, S, 2d) at
    `value_at`."""
    diff = first - lam[0, 3].to(first.dtype) * second  # (heads, L, S)
    output = diff.to(values.dtype) @ values  # (heads, L, 2d)
    return record_heads(trace, tail, at, maps, lam, op, list(diff), output, value_at, eps)


def record_heads(trace: Trace, tail: Tail, at: list[Place], maps: list[tuple[Place, Place]], lam: torch.Tensor,
                 op: LambdaTerms, diff: list[torch.Tensor | LazyTensor], output: torch.Tensor,
                 value_at: list[Place], eps: float = EPS) -> torch.Tensor:
    """Each head's lambda, diff_weights (`diff[h]`, whole or read by tiles), diff_output (`output` (heads, L, 2d),
    D·V already summed) and head_norm; returns head_norm (heads, L, 2d)."""
    qk = (tail.query_axis, tail.key_axis)
    value = lam[0, 3]
    init = float(lam[0, 2])
    squares = output.to(masks.softmax_dtype(output.dtype))
    normed = ((1 - init) * squares * torch.rsqrt(squares.pow(2).mean(-1, keepdim=True) + eps)).to(output.dtype)
    width = output.shape[-1]
    out_axes = (tail.query_axis, dim_axis(width))
    for h, place in enumerate(at):
        a1, a2 = maps[h]
        trace.add(Stage(place.at("lambda"), lam,  # float32 (or 64) as D used it: bfloat16 would round λ away
                        Msg("λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init,   λ_init = 0.8 − 0.6·exp(−0.3·{depth}) "
                            "= {init}", depth=op.depth, init=f"{init:.4g}"), (LAMBDA_ROW, LAMBDA_TERMS), op))
        trace.put(Stage(place.at("diff_weights"), diff[h],
                        Msg("D = A₁ − λ·A₂   (λ = {lam}): rows sum to 1 − λ, and a cell may be negative",
                            lam=f"{float(value):.4g}"), qk, DiffWeights(a1, a2, place.at("lambda"))))
        trace.add(Stage(place.at("diff_output"), output[h],
                        Msg("O = D·V: each row mixes the value rows by the difference, {w} columns wide", w=width),
                        out_axes, WeightedSum(place.at("diff_weights"), value_at[h])))
        trace.add(Stage(place.at("head_norm"), normed[h],
                        Msg("Y = (1 − λ_init)·RMSNorm(O) over the head's {w} dimensions   (1 − λ_init = {k})",
                            w=width, k=f"{1 - init:.4g}"), out_axes,
                        DiffNorm(place.at("diff_output"), place.at("lambda"), eps)))
    return normed


def record_concat(trace: Trace, normed: torch.Tensor, at: list[Place], axis: Axis, where: Place,
                  name: str = "head_norm") -> None:
    """The heads' normed outputs (`name`: gated where the gate is on) side by side (N, heads·2d): what W_o reads."""
    n, width = normed.shape[1], normed.shape[0] * normed.shape[2]
    formula = (Msg("C = [Y_0 | Y_1 | … ]: the heads' normed outputs side by side") if name == "head_norm" else
               Msg("C = [O_g,0 | O_g,1 | … ]: the heads' gated outputs side by side"))
    trace.add(Stage(where, normed.permute(1, 0, 2).reshape(n, width), formula, (axis, dim_axis(width)),
                    Concat(tuple(place.at(name) for place in at))))
