"""The arithmetic of flash's cells: a tile's score, the running max, the rescale, the denominator, the
accumulator and the output divided once at the end, each recomputed in float64 from the trace's own tensors."""

from __future__ import annotations

import math

from attn_tui.attention.variants.flash import Accumulate, Denominator, Normalise, Rescale, RunningMax, TileScores
from attn_tui.explain.common import MAX_TERMS, Explained, Explainer, floats, fmt, sum_terms
from attn_tui.i18n import _
from attn_tui.trace.masks import FILLS
from attn_tui.trace.ops import Op, Place
from attn_tui.trace.stage import Stage, Trace


def _tile_scores(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, TileScores)
    i, c = index
    j = op.offset + c
    query, key = trace.stages[op.query], trace.stages[op.key]
    lines, dot = sum_terms(query.data[i], key.data[j], f"Q[{i}]", f"K[{j}]")
    scaled = dot * op.factor / op.temperature
    lines.append(f"· {fmt(op.factor)}" + (f" / {op.temperature:g}" if op.temperature != 1 else "")
                 + f" = {fmt(scaled)}")
    allowed = op.mask is None or bool(op.mask.tile(slice(i, i + 1), slice(c, c + 1))[0, 0])
    tile = stage.step or 0  # counted from 0, as torch indexes and the stage caption counts tiles
    lines.insert(0, _("column {c} of tile {t} is key {j}").format(c=c, t=tile, j=j))
    if allowed:
        return f"S_t[{i},{c}] = Q[{i}]·K[{j}] / √d_k", lines, scaled
    assert op.mask is not None
    lines += [_("masked: {reason}").format(reason=reason) for reason in op.mask.reasons(i, c)]
    lines.append(_("the score is replaced by the fill {fill}").format(fill=op.fill))
    return f"S_t[{i},{c}]", lines, FILLS[op.fill]


def _cell(trace: Trace, place: Place | None, i: int, j: int = 0, empty: float = 0.0) -> float:
    return empty if place is None else float(trace.stages[place].data[i, j].double())


def _running_max(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, RunningMax)
    i = index[0]
    before = _cell(trace, op.previous, i, empty=-math.inf)
    row = floats(trace.stages[op.tile].data[i])
    here = max(row)
    total = max(before, here)
    return (f"m_{stage.step}[{i}] = max(m_prev, max_c S_t[{i}, c])",
            [_("the max before this tile: {m}").format(m=fmt(before))
             + ("" if op.previous is not None else _("  (no tile seen yet)")),
             _("the largest score of this tile's row {i}: {m}").format(i=i, m=fmt(here)), f"= {fmt(total)}"], total)


def _rescale(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, Rescale)
    i = index[0]
    before = _cell(trace, op.previous, i, empty=-math.inf)
    now = _cell(trace, op.current, i)
    if math.isinf(before) and before < 0:
        return (f"α[{i}] = exp(m_prev − m)", [_("nothing was summed before (m_prev = −∞): α = 0")], 0.0)
    total = math.exp(before - now)
    note = _("the max did not grow: what was summed stays as it is") if before == now else _(
        "the max grew: what was summed before shrinks by this factor")
    return (f"α[{i}] = exp(m_prev − m)", [f"exp({fmt(before)} − {fmt(now)}) = {fmt(total)}", note], total)


def _exps(trace: Trace, tile: Place, top: Place, i: int) -> tuple[list[float], float]:
    m = _cell(trace, top, i)
    return [0.0 if math.isinf(x) and x < 0 else math.exp(x - m) for x in floats(trace.stages[tile].data[i])], m


def _denominator(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, Denominator)
    i = index[0]
    exps, m = _exps(trace, op.tile, op.max, i)
    alpha, before = _cell(trace, op.rescale, i), _cell(trace, op.previous, i)
    total = alpha * before + math.fsum(exps)
    shown = " + ".join(fmt(e) for e in exps[:MAX_TERMS]) + (" + …" if len(exps) > MAX_TERMS else "")
    return (f"l[{i}] = α·l_prev + Σ_c exp(S_t[{i},c] − m)",
            [f"α·l_prev = {fmt(alpha)}·{fmt(before)} = {fmt(alpha * before)}",
             f"Σ_c exp(S_t[{i},c] − {fmt(m)}) = {shown} = {fmt(math.fsum(exps))}", f"= {fmt(total)}"], total)


def _accumulate(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, Accumulate)
    i, j = index
    exps, _ = _exps(trace, op.tile, op.max, i)
    values = floats(trace.stages[op.values].data[op.offset:op.offset + len(exps), j])
    alpha, before = _cell(trace, op.rescale, i), _cell(trace, op.previous, i, j)
    fresh = math.fsum(e * v for e, v in zip(exps, values))
    terms = " + ".join(f"{fmt(e)}·{fmt(v)}" for e, v in list(zip(exps, values))[:MAX_TERMS])
    lines = [f"Σ_c exp(S_t[{i},c] − m)·V[{op.offset}+c, {j}] =",
             "  " + terms + (" + …" if len(exps) > MAX_TERMS else ""), f"  = {fmt(fresh)}"]
    total = alpha * before + fresh
    return (f"Õ[{i},{j}] = α·Õ_prev[{i},{j}] + Σ_c exp(S_t[{i},c] − m)·V[{op.offset}+c, {j}]",
            [f"α·Õ_prev = {fmt(alpha)}·{fmt(before)} = {fmt(alpha * before)}", *lines, f"= {fmt(total)}"], total)


def _normalise(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, Normalise)
    i, j = index
    acc, total_l = _cell(trace, op.accumulator, i, j), _cell(trace, op.denominator, i)
    if total_l == 0:
        return (f"O[{i},{j}] = Õ / l", [_("l = 0: row {i} may attend to no key, so its output is 0 (as SDPA "
                                         "returns)").format(i=i)], 0.0)
    total = acc / total_l
    return (f"O[{i},{j}] = Õ[{i},{j}] / l[{i}]",
            [f"{fmt(acc)} / {fmt(total_l)} = {fmt(total)}",
             _("dividing once at the end is what lets flash skip the whole weight matrix")], total)


EXPLAINERS: dict[type[Op], Explainer] = {TileScores: _tile_scores, RunningMax: _running_max, Rescale: _rescale,
                                         Denominator: _denominator, Accumulate: _accumulate, Normalise: _normalise}
