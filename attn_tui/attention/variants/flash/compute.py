"""Flash attention's way of computing scaled dot: key tiles and an online softmax, never the whole score matrix.

    m = torch.full((L,), float("-inf")); l = torch.zeros(L); acc = torch.zeros(L, d_v)
    for j in range(0, S, T):                              # one tile of T keys at a time
        s = q @ k[j:j + T].T / math.sqrt(d)               # (L, T): the tile's scores only
        m_new = torch.maximum(m, s.max(-1).values); alpha = torch.exp(m - m_new)
        p = torch.exp(s - m_new[:, None])
        l = alpha * l + p.sum(-1); acc = alpha[:, None] * acc + p @ v[j:j + T]; m = m_new
    o = acc / l[:, None]                                  # = softmax(q @ k.T / √d) @ v

The kernel reads the keys T at a time. For each tile it keeps, per query row, the
largest score so far m, the softmax denominator so far l and the unnormalised output so
far Õ; when a tile raises the max, what was summed before is rescaled by
α = exp(m_old − m_new). After the last tile Õ / l is exactly softmax(QKᵀ/√d_k)·V. Each
tile's stages sit at step = the tile's index, and the trace's steps say so (a key tile,
labelled with its keys), so the app steps through them as tiles.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import warn_empty_rows
from attn_tui.attention.variants.flash import Accumulate, Denominator, Normalise, Rescale, RunningMax, TileScores
from attn_tui.errors import ConfigError
from attn_tui.i18n import NP_, Msg
from attn_tui.trace import masks
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Axis, Stage, dim_axis
from attn_tui.trace.steps import Steps, key_tile

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

# the one-column axes of the running max m, the rescale α and the denominator l (their names marked for translation)
M_AXIS, ALPHA_AXIS = Axis(NP_("axis", "max"), ("m",)), Axis(NP_("axis", "rescale"), ("α",))
L_AXIS = Axis(NP_("axis", "sum"), ("l",))


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    size = ctx.settings.value("tile")
    if size < 1:
        raise ConfigError(Msg("--tile must be at least 1 key, not {tile}", tile=size))
    trace, tail = ctx.trace, ctx.tail
    n_q, n_k, d_v = q.shape[0], k.shape[0], v.shape[1]
    factor = 1 / math.sqrt(q.shape[1])
    ctx.record_geometry(factor)
    dtype = masks.softmax_dtype(q.dtype)
    values = v.to(dtype)
    top = torch.full((n_q, 1), -math.inf, dtype=dtype, device=q.device)  # m: nothing seen yet
    total = torch.zeros(n_q, 1, dtype=dtype, device=q.device)  # l
    acc = torch.zeros(n_q, d_v, dtype=dtype, device=q.device)  # Õ
    tiles = -(-n_k // size)
    previous: Place | None = None
    steps = Steps("tile")
    for t in range(tiles):
        c0, c1 = t * size, min(n_k, (t + 1) * size)
        part = None if tail.mask is None else tail.mask.part(slice(None), slice(c0, c1))
        key_axis = Axis("key", tail.key_axis.labels[c0:c1])
        # The same arithmetic as scaled_dot's scores → scaled → masked, on this tile's keys only.
        scores = ((q @ k[c0:c1].T) * factor).to(dtype)  # (L, T)
        scores = scores / tail.temperature if tail.temperature != 1 else scores
        if part is not None:
            scores = scores.masked_fill(~part.allowed, masks.FILLS[tail.fill])
        at = Place("tile_scores", step=t)
        keys = f"{c0}…{c1 - 1}"
        trace.add(Stage(at, scores, Msg("S_t = Q·K[{keys}]ᵀ / √d_k, masked: tile {t}'s scores (keys {keys})",
                                        keys=keys, t=t),
                        (ctx.query_axis, key_axis), TileScores(Place("query"), Place("key"), c0, factor, part,
                                                               tail.fill, tail.temperature)))
        new_top = torch.maximum(top, scores.amax(dim=-1, keepdim=True))  # (L, 1)
        # α = exp(m_old − m_new); 0 while nothing was seen (m_old = −∞), which also avoids −∞ − (−∞).
        alpha = torch.where(torch.isneginf(top), torch.zeros_like(top), torch.exp(top - new_top))
        kept = torch.where(torch.isneginf(scores), torch.zeros_like(scores), torch.exp(scores - new_top))  # (L, T)
        total = alpha * total + kept.sum(dim=-1, keepdim=True)
        acc = alpha * acc + kept @ values[c0:c1]
        top = new_top
        here = Place("running_max", step=t)
        trace.add(Stage(here, top, Msg("m_t = max(m_(t−1), rowmax S_t): the largest score so far (−∞ before any)"),
                        (ctx.query_axis, M_AXIS), RunningMax(at, previous and previous.at("running_max"))))
        trace.add(Stage(here.at("rescale"), alpha,
                        Msg("α_t = exp(m_(t−1) − m_t): how much the sums so far shrink when the max grows"),
                        (ctx.query_axis, ALPHA_AXIS), Rescale(here, previous and previous.at("running_max"))))
        trace.add(Stage(here.at("denominator"), total, Msg("l_t = α_t·l_(t−1) + Σ_c exp(S_t[:, c] − m_t)"),
                        (ctx.query_axis, L_AXIS),
                        Denominator(at, here, here.at("rescale"), previous and previous.at("denominator"))))
        trace.add(Stage(here.at("accumulator"), acc,
                        Msg("Õ_t = α_t·Õ_(t−1) + Σ_c exp(S_t[:, c] − m_t)·V[{keys}]: the output, not yet divided",
                            keys=keys),
                        (ctx.query_axis, dim_axis(d_v)),
                        Accumulate(at, here, here.at("rescale"), previous and previous.at("accumulator"),
                                   Place("value"), c0)))
        previous = here
        steps = steps.plus(key_tile(t, c0, key_axis.labels))
    trace.step_axis = steps
    assert previous is not None
    output = torch.where(total > 0, acc / total.clamp_min(torch.finfo(dtype).tiny), torch.zeros_like(acc))
    trace.add(Stage(Place("output"), output.to(v.dtype),
                    Msg("O = Õ / l after the last tile: equal to softmax(QKᵀ/√d_k)·V, computed tile by tile"),
                    (ctx.query_axis, dim_axis(d_v)),
                    Normalise(previous.at("accumulator"), previous.at("denominator"))))
    warn_empty_rows(trace, tail)
