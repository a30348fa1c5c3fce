"""The arithmetic of linear attention's cells: a unit-length row, a decay, a write strength, one state entry,
one entry of the implied matrix, and an output read from the state (and, beside it, from A·V).

Each explainer recomputes its cell in float64 from the trace's own tensors, as the other
explainer modules do; the state's entry from the previous state, the implied matrix's by
carrying β_s·k_s forward through every later step, independently of the closed form the
trace used.
"""

from __future__ import annotations

import math

import torch

from attn_tui.attention.variants.linear import Decay, Implied, L2Norm, StateReadout, StateUpdate, WriteStrength
from attn_tui.explain.common import Explained, Explainer, fmt, param, row64, sum_terms
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.ops import Op
from attn_tui.trace.stage import Stage, Trace


def _gate_input(trace: Trace, source: ops.Operand, t: int, weight: str, index: int) -> tuple[list[str], float]:
    x = trace.operand(source)[t]
    w = trace.params[weight].reshape(-1, x.shape[-1])[index]
    name = source if isinstance(source, str) else trace.stages[source].symbol
    return sum_terms(x, w, f"{name}[{t}]", weight)


def _l2(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, L2Norm)
    i, j = index
    source = trace.stages[op.source]
    row = row64(source.data[i])
    length = math.sqrt(float((row * row).sum()) + op.eps)
    total = float(row[j]) / length * op.scale
    lines = [f"‖{source.symbol}[{i}]‖ = √(Σ_m {source.symbol}[{i},m]² + {op.eps:g}) = {fmt(length)}",
             f"{fmt(float(row[j]))} / {fmt(length)}" + (f" · {fmt(op.scale)}" if op.scale != 1 else "")
             + f" = {fmt(total)}"]
    if op.scale != 1:
        lines.append(_("1/√d_k = {f}: the query is scaled once, here, instead of every score").format(
            f=fmt(op.scale)))
    return f"{stage.symbol}[{i},{j}] = {source.symbol}[{i},{j}] / ‖{source.symbol}[{i}]‖", lines, total


def _decay(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, Decay)
    t = index[0]
    lines, dot = _gate_input(trace, op.source, t, op.weight, op.index)
    bias, a_log = param(trace, op.dt_bias, op.index), param(trace, op.a_log, op.index)
    soft = math.log1p(math.exp(dot + bias)) if dot + bias < 30 else dot + bias
    g = -math.exp(a_log) * soft
    total = math.exp(g)
    lines += [f"softplus({fmt(dot)} + dt_bias {fmt(bias)}) = {fmt(soft)}",
              f"g = −exp(A_log {fmt(a_log)})·{fmt(soft)} = {fmt(g)}", f"α = exp({fmt(g)}) = {fmt(total)}",
              _("the state keeps this share of itself before token {t} writes").format(t=t)]
    return f"α[{t}] = exp(−exp(A_log)·softplus(x_{t}·w_a + dt_bias))", lines, total


def _beta(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, WriteStrength)
    t = index[0]
    lines, dot = _gate_input(trace, op.source, t, op.weight, op.index)
    total = 1 / (1 + math.exp(-dot))
    lines += [f"σ({fmt(dot)}) = {fmt(total)}",
              _("1 overwrites what the state recalls for this key with the new value; 0 writes nothing")]
    return f"β[{t}] = σ(x_{t}·w_b)", lines, total


def _cell(trace: Trace, place: ops.Place | None, i: int, j: int = 0) -> float:
    return 0.0 if place is None else float(trace.stages[place].data[i, j].double())


def _state(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, StateUpdate)
    a, b = index
    t = op.row
    k = row64(trace.stages[op.key].data[t])
    v = float(trace.stages[op.value].data[t, b].double())
    before = _cell(trace, op.previous, a, b)
    start = [_("S_(t−1)[{a},{b}] = {s}").format(a=a, b=b, s=fmt(before))
             + ("" if op.previous is not None else _("  (nothing written yet)"))]
    if op.decay is None or op.beta is None:
        total = before + float(k[a]) * v
        return (f"S_{t}[{a},{b}] = S_(t−1)[{a},{b}] + k̂_{t}[{a}]·v_{t}[{b}]",
                [*start, f"{fmt(before)} + {fmt(float(k[a]))}·{fmt(v)} = {fmt(total)}"], total)
    alpha, beta = _cell(trace, op.decay, t), _cell(trace, op.beta, t)
    column = row64(trace.stages[op.previous].data[:, b]) if op.previous is not None else torch.zeros_like(k)
    recalled = alpha * float((column * k).sum())
    written = beta * (v - recalled)
    total = alpha * before + float(k[a]) * written
    return (f"S_{t}[{a},{b}] = α·S_(t−1)[{a},{b}] + k̂_{t}[{a}]·β·(v_{t}[{b}] − α·Σ_m S_(t−1)[m,{b}]·k̂_{t}[m])",
            [*start, f"α = {fmt(alpha)}, β = {fmt(beta)}",
             _("what the decayed state recalls for k̂_{t}: α·Σ_m S[m,{b}]·k̂[m] = {r}").format(t=t, b=b,
                                                                                        r=fmt(recalled)),
             _("written: β·(v − recalled) = {beta}·({v} − {r}) = {w}").format(beta=fmt(beta), v=fmt(v),
                                                                           r=fmt(recalled), w=fmt(written)),
             f"{fmt(alpha)}·{fmt(before)} + {fmt(float(k[a]))}·{fmt(written)} = {fmt(total)}"], total)


def _implied(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, Implied)
    t, s = index
    q = row64(trace.stages[op.query].data[t])
    keys = trace.stages[op.key].data
    if s > t:
        return f"A[{t},{s}]", [_("key {s} comes after query {t}: the state has not seen it").format(s=s, t=t)], 0.0
    if op.decay is None or op.beta is None:
        lines, total = sum_terms(q, keys[s], f"q̂[{t}]", f"k̂[{s}]")
        return f"A[{t},{s}] = q̂_{t}·k̂_{s}", lines, total
    beta_s = _cell(trace, op.beta, s)
    carried = row64(keys[s]) * beta_s  # u = β_s·k̂_s, then each later step decays it and takes out its own key
    lines = [_("token {s} writes u = β_{s}·k̂_{s} (β = {b})").format(s=s, b=fmt(beta_s))]
    for r in range(s + 1, t + 1):
        k_r = row64(keys[r])
        alpha, beta = _cell(trace, op.decay, r), _cell(trace, op.beta, r)
        overlap = float((k_r * carried).sum())
        carried = alpha * (carried - beta * k_r * overlap)
        lines.append(_("step {r}: u ← α·(u − β·k̂_{r}·(k̂_{r}·u)), α = {a}, β = {b}, k̂·u = {o}").format(
            r=r, a=fmt(alpha), b=fmt(beta), o=fmt(overlap)))
    total = float((q * carried).sum())
    lines.append(f"q̂_{t}·u = {fmt(total)}")
    return f"A[{t},{s}] = q̂_{t}·P_({t},{s})·β_{s}·k̂_{s}", lines, total


def _readout(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, StateReadout)
    t, j = index
    q = trace.stages[op.query].data[t]
    column = trace.stages[op.states[t]].data[:, j]
    lines, total = sum_terms(q, column, f"q̂[{t}]", f"S_{t}[:,{j}]")
    other = float((row64(trace.stages[op.implied].data[t]) * row64(trace.stages[op.value].data[:, j])).sum())
    lines += [_("the other way, Σ_s A[{t},s]·V[s,{j}] = {o}: the same output, read from the implied "
                "matrix").format(t=t, j=j, o=fmt(other))]
    return f"O[{t},{j}] = Σ_a q̂_{t}[a]·S_{t}[a,{j}]", lines, total


EXPLAINERS: dict[type[Op], Explainer] = {L2Norm: _l2, Decay: _decay, WriteStrength: _beta, StateUpdate: _state,
                                         Implied: _implied, StateReadout: _readout}
