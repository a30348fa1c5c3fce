"""Rotary position embedding (RoPE): q and k turned by angles that grow with their position, then scaled dot.

    def rotate(x, pos):                                 # Llama's rotate-half: dimension i pairs with i + d/2
        theta = base ** (-torch.arange(0, d, 2) / d)   # (d/2,)
        ang = torch.cat([pos[:, None] * theta] * 2, -1)  # (n, d)
        x1, x2 = x.chunk(2, -1)
        return x * ang.cos() + torch.cat([-x2, x1], -1) * ang.sin()
    o = F.scaled_dot_product_attention(rotate(q, torch.arange(L)), rotate(k, torch.arange(S)), v, attn_mask=mask)

Turning query i by i·θ and key j by j·θ makes q·k depend on i − j alone: relative
position with no parameter learned. The layout is Llama's rotate-half, as transformers
has it: dimension i pairs with i + d/2, θ_i = base^(−2i/d). The SmolLM2 source records
its heads through the same functions, with the model's own cos and sin.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.attention.variants.modifiers import gate, norm_qk, soft_cap
from attn_tui.attention.variants.scaled_dot.compute import SCALE_REASON, scaled_pre
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.trace.geometry import Positional
from attn_tui.trace.ops import Dot, Place, Rotary, Scale
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def angles(positions: int, d: int, base: float, dtype: torch.dtype,
           device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
    """cos and sin (positions, d), each half repeated, as transformers' rotary embedding makes them.

    Computed in float64 and cast, so a long input's large angles keep their precision.
    """
    inverse = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)  # (d/2,) θ_i
    angle = torch.arange(positions, dtype=torch.float64)[:, None] * inverse[None, :]  # (P, d/2)
    angle = torch.cat([angle, angle], dim=-1)  # (P, d): dimension i and i + d/2 share θ_i
    return angle.cos().to(dtype=dtype, device=device), angle.sin().to(dtype=dtype, device=device)


def rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """x·cos + rotate_half(x)·sin, rotate_half([x1, x2]) = [−x2, x1]: transformers' `apply_rotary_pos_emb`."""
    half = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin


def check_even(d: int) -> None:
    if d % 2:
        raise ConfigError(Msg("rope turns pairs of dimensions (i, i + d/2): the width of Q and K must be even, "
                              "not {d}", d=d))


def rotation_formula(letter: str, base: float) -> Msg:
    return Msg("{letter}_rot[p] = {letter}[p] turned pair by pair: (x_i, x_{{i+d/2}}) by the angle p·θ_i, "
               "θ_i = {base}^(−2i/d)   (Llama's rotate-half, as in transformers)", letter=letter, base=f"{base:g}")


def record_rotation(trace: Trace, at: Place, source: Place, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                    axes: tuple[Axis, Axis], base: float, scaling: float = 1.0, first: int = 0) -> torch.Tensor:
    """Stage `at` = `x` (rows, d) rotated by row position (cos, sin (rows, d)); returns the rotated tensor."""
    letter = "Q" if at.name.startswith("query") else "K"
    return trace.add(Stage(at, rotate(x, cos, sin), rotation_formula(letter, base), axes,
                           Rotary(source, base, scaling, first)))


def rotated_score_stages(axes: tuple[Axis, Axis], d_k: int, scale: float | None = None
                         ) -> tuple[list[PreStage], float]:
    """scores (of the rotated q and k) and scaled, and the factor: 1/√d_k, or a model's own `scale`."""
    factor = 1 / math.sqrt(d_k) if scale is None else scale
    formula = (Msg("S' = S / √d_k   (d_k = {d}, √d_k = {root})", d=d_k, root=f"{math.sqrt(d_k):.4g}") if scale is None
               else Msg("S' = S · {scale}   (the model's own scaling, d_k = {d})", scale=f"{scale:.4g}", d=d_k))
    return [PreStage("scores", "S = Q_rot·K_rotᵀ: S[i,j] = q_rot,i·k_rot,j", axes,
                     lambda at: Dot(at.at("query_rot"), at.at("key_rot"))),
            PreStage("scaled", formula, axes, lambda at: Scale(at.at("scores"), factor, SCALE_REASON))], factor


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    check_even(q.shape[1])
    base = ctx.settings.value("rope_base")
    if not math.isfinite(base) or base <= 1:
        raise ConfigError(Msg("--rope-base must be a number above 1, not {base}", base=f"{base:g}"))
    d = q.shape[1]
    n = max(q.shape[0], k.shape[0])
    cos, sin = angles(n, d, base, q.dtype, q.device)  # (n, d)
    dims = dim_axis(d)
    qn, kn = norm_qk(ctx, q[None], k[None], [Place("query")], [Place("key")], [0])  # normed before the turn (Qwen3)
    suffix = "" if ctx.settings.qk_norm == "none" else "_norm"
    q_rot = record_rotation(ctx.trace, Place("query_rot"), Place("query" + suffix), qn[0], cos[:q.shape[0]],
                            sin[:q.shape[0]], (ctx.query_axis, dims), base)
    k_rot = record_rotation(ctx.trace, Place("key_rot"), Place("key" + suffix), kn[0], cos[:k.shape[0]],
                            sin[:k.shape[0]], (ctx.key_axis, dims), base)
    stages, factor = rotated_score_stages(ctx.qk_axes, d)
    pre, stages, last = soft_cap(ctx, scaled_pre(q_rot[None], k_rot[None], factor), stages, "scaled")
    ctx.record_geometry(factor, Positional("rotary", base))
    gate(ctx, ctx.scores(pre, stages, last)[None], [Place("output")])
