"""The arithmetic of two shared ops of modern attention: a rotated pair and a sink's share of a row.

Rotary positions are read by the rope and mla variants and by every rotary model family, the sink by the shared
tail; `EXPLAINERS` maps each to its explainer, recomputed in float64 from the trace's own tensors and compared
with the stored cell, like every other.
"""

from __future__ import annotations

import math

from attn_tui.explain.common import (
    Explained,
    Explainer,
    floats,
    fmt,
    param,
    sink_row,
)
from attn_tui.i18n import _
from attn_tui.trace import ops
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


EXPLAINERS: dict[type[ops.Op], Explainer] = {ops.Rotary: _rotary, ops.SinkMass: _sink_mass}
