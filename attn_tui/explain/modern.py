"""The arithmetic of the ops modern attention adds: a rotated pair, a distance bias, a sink, an online softmax.

`EXPLAINERS` maps each of these op kinds to its explainer; `explain.cell` puts it in the
registry, so the inspector explains a RoPE, ALiBi, sink or flash cell (and SmolLM2's) the
same way as any other: the terms written out, recomputed in float64 from the trace's own
tensors, and compared with the stored cell.
"""

from __future__ import annotations

import math

from attn_tui.explain.common import (
    MAX_TERMS,
    Explained,
    Explainer,
    floats,
    fmt,
    param,
    sink_row,
    sum_terms,
)
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.masks import FILLS
from attn_tui.trace.stage import Stage, Trace


def _rotary(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Rotary)
    p, j = index
    source = trace.stages[op.source]
    x = floats(source.data[p])
    d = len(x)
    half = d // 2
    i = j % half
    partner = j + half if j < half else j - half
    theta = op.base ** (-2 * i / d)
    p += op.first  # row p of a step's query is the token at position first + p
    angle = p * theta
    cos, sin = math.cos(angle) * op.scaling, math.sin(angle) * op.scaling
    if j < half:
        total = x[j] * cos - x[partner] * sin
        term = f"{fmt(x[j])}·{fmt(cos)} − {fmt(x[partner])}·{fmt(sin)}"
        rule = f"x_{j}·cos − x_{partner}·sin"
    else:
        total = x[j] * cos + x[partner] * sin
        term = f"{fmt(x[j])}·{fmt(cos)} + {fmt(x[partner])}·{fmt(sin)}"
        rule = f"x_{j}·cos + x_{partner}·sin"
    lines = [_("pair ({a}, {b}) of {name}[{p}] is turned by the angle p·θ_{i}").format(a=min(j, partner),
                b=max(j, partner), name=source.symbol, p=p, i=i),
             f"θ_{i} = {op.base:g}^(−2·{i}/{d}) = {fmt(theta)}",
             _("angle = {p}·θ_{i} = {angle} rad").format(p=p, i=i, angle=fmt(angle)),
             f"cos = {fmt(cos)}, sin = {fmt(sin)}" + (_("  (× the model's scaling {s})").format(s=fmt(op.scaling))
                                                      if op.scaling != 1 else ""),
             f"{rule} = {term}", f"= {fmt(total)}"]
    return f"{stage.symbol}[{p},{j}] = ({rule})", lines, total


def _distance_bias(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.DistanceBias)
    i, j = index
    slope = param(trace, op.slopes, op.index)
    total = 0.0 - slope * abs(i - j)  # +0 on the diagonal, as the stage holds
    heads = trace.params[op.slopes].numel()
    return (f"B[{i},{j}] = −m·|{i} − {j}|",
            [_("m = {m}: the slope of head {h} (ALiBi's geometric sequence for {n} heads)").format(
                m=fmt(slope), h=op.index, n=heads),
             _("distance |{i} − {j}| = {d}").format(i=i, j=j, d=abs(i - j)),
             f"−{fmt(slope)}·{abs(i - j)} = {fmt(total)}",
             _("the farther the key, the lower its score: nearby tokens win ties")], total)


def _sink_mass(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.SinkMass)
    i = index[0]
    source = trace.stages[op.source]
    sink = param(trace, op.sink, op.index)
    row = sink_row(source, i, sink)
    total = row.sunk / row.denom
    return (f"p_sink[{i}] = exp(s − max) / (Σ_k exp({source.symbol}[{i},k] − max) + exp(s − max))",
            [*row.opening(i, op.index),
             f"exp({fmt(sink)} − {fmt(row.top)}) = {fmt(row.sunk)}",
             row.total(),
             f"{fmt(row.sunk)} / {fmt(row.denom)} = {fmt(total)}",
             _("what query {i} gave to the sink instead of to any key").format(i=i)], total)


def _tile_scores(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.TileScores)
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


def _cell(trace: Trace, place: ops.Place | None, i: int, j: int = 0, empty: float = 0.0) -> float:
    return empty if place is None else float(trace.stages[place].data[i, j].double())


def _running_max(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.RunningMax)
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
    assert isinstance(op, ops.Rescale)
    i = index[0]
    before = _cell(trace, op.previous, i, empty=-math.inf)
    now = _cell(trace, op.current, i)
    if math.isinf(before) and before < 0:
        return (f"α[{i}] = exp(m_prev − m)", [_("nothing was summed before (m_prev = −∞): α = 0")], 0.0)
    total = math.exp(before - now)
    note = _("the max did not grow: what was summed stays as it is") if before == now else _(
        "the max grew: what was summed before shrinks by this factor")
    return (f"α[{i}] = exp(m_prev − m)", [f"exp({fmt(before)} − {fmt(now)}) = {fmt(total)}", note], total)


def _exps(trace: Trace, tile: ops.Place, top: ops.Place, i: int) -> tuple[list[float], float]:
    m = _cell(trace, top, i)
    return [0.0 if math.isinf(x) and x < 0 else math.exp(x - m) for x in floats(trace.stages[tile].data[i])], m


def _denominator(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Denominator)
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
    assert isinstance(op, ops.Accumulate)
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
    assert isinstance(op, ops.Normalise)
    i, j = index
    acc, total_l = _cell(trace, op.accumulator, i, j), _cell(trace, op.denominator, i)
    if total_l == 0:
        return (f"O[{i},{j}] = Õ / l", [_("l = 0: row {i} may attend to no key, so its output is 0 (as SDPA "
                                         "returns)").format(i=i)], 0.0)
    total = acc / total_l
    return (f"O[{i},{j}] = Õ[{i},{j}] / l[{i}]",
            [f"{fmt(acc)} / {fmt(total_l)} = {fmt(total)}",
             _("dividing once at the end is what lets flash skip the whole weight matrix")], total)


EXPLAINERS: dict[type[ops.Op], Explainer] = {
    ops.Rotary: _rotary, ops.DistanceBias: _distance_bias, ops.SinkMass: _sink_mass, ops.TileScores: _tile_scores,
    ops.RunningMax: _running_max, ops.Rescale: _rescale, ops.Denominator: _denominator, ops.Accumulate: _accumulate,
    ops.Normalise: _normalise,
}
