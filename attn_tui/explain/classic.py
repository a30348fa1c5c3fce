"""The arithmetic of the ops classic attention is made of: projections, dot products, scaling, masks, softmax,
weighted sums, additive energies, and the decoders' stacks and means.

One explainer per op kind, whatever the source (a variant, a real model, a trained decoder,
recorded code); `EXPLAINERS` maps each op kind to its explainer, and `explain.cell` puts it
in the registry.
"""

from __future__ import annotations

import math

import torch

from attn_tui.explain.common import (
    MAX_TERMS,
    Explained,
    Explainer,
    finite_max,
    first_terms,
    fmt,
    operand_name,
    param,
    row64,
    shifted_exps,
    sink_row,
    sum_terms,
)
from attn_tui.i18n import Msg, _
from attn_tui.trace import ops
from attn_tui.trace.masks import FILLS
from attn_tui.trace.stage import Stage, Trace


def _given(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Given)
    value = float(stage.data[index].double())
    return f"{stage.symbol}{list(index)}", [str(op.what), f"= {fmt(value)}"], value


def _lookup(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Lookup)
    i, j = index
    token, row = trace.query_tokens[i], op.rows[i]
    value = float(trace.params[op.table][row, j].double())
    return (_("X[{i},{j}] for token {token}").format(i=i, j=j, token=repr(token)),
            [_("row {row} of the seeded table (vocabulary entry {token}), column {j}").format(
                row=row, token=repr(token), j=j),
             _("the same word always gets the same row; <pad> is the zero row") if token == "<pad>"
             else _("the same word always gets the same row"),
             f"= {fmt(value)}"], value)


def _sinusoid(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Sinusoid)
    pos, j = index
    d = stage.shape[1]
    even = j - j % 2
    angle = pos / op.base ** (even / d)
    fn = "sin" if j % 2 == 0 else "cos"
    value = math.sin(angle) if j % 2 == 0 else math.cos(angle)
    return (f"PE[{pos},{j}]",
            [f"{fn}(pos / {op.base:g}^({even}/{d})) = {fn}({pos} / {fmt(op.base ** (even / d))})",
             f"= {fn}({fmt(angle)}) = {fmt(value)}"], value)


def _sum(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Sum)
    parts = [float(trace.stages[p].data[index].double()) for p in op.parts]
    names = " + ".join(trace.stages[p].name for p in op.parts)
    total = math.fsum(parts)
    return (f"{stage.symbol}{list(index)} = {names}", [" + ".join(fmt(x) for x in parts), f"= {fmt(total)}"],
            total)


def _linear(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Linear)
    i, j = index
    row = op.offset + j
    weight = trace.params[op.weight]
    source = operand_name(trace, op.source)
    lines, total = sum_terms(trace.operand(op.source)[i], weight[row],
                              f"{source}[{i}]", f"{op.weight}[{row}]")
    title = f"{stage.symbol}[{i},{j}] = {source}[{i}]·{op.weight}[{row}]"
    if op.bias is not None:
        b = float(trace.params[op.bias][row].double())
        total += b
        lines.append(f"  + {op.bias}[{row}] ({fmt(b)}) = {fmt(total)}")
        title += f" + {op.bias}[{row}]"
    return title, lines, total


def _identity(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Identity)
    i, j = index
    source = operand_name(trace, op.source)
    value = float(trace.operand(op.source)[i, j].double())
    return (f"{stage.symbol}[{i},{j}] = {source}[{i},{j}]",
            [_("identity projection: {symbol} = {source}, nothing learned").format(symbol=stage.symbol, source=source),
             f"= {fmt(value)}"], value)


def _columns(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Columns)
    i, j = index
    value = float(trace.operand(op.source)[i, op.offset + j].double())
    source = op.source if isinstance(op.source, str) else trace.stages[op.source].name
    if stage.head is None:
        return (f"{stage.name} [{i},{j}]", [_("column {j} is column {col} of {source}").format(
            j=j, col=op.offset + j, source=source), f"= {fmt(value)}"], value)
    return (_("{name} of head {head} [{i},{j}]").format(name=stage.name, head=stage.head, i=i, j=j),
            [_("column {j} of head {head} is column {col} of {source}").format(
                j=j, head=stage.head, col=op.offset + j, source=source), f"= {fmt(value)}"], value)


def _dot(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Dot)
    i, j = index
    left, right = trace.stages[op.left], trace.stages[op.right]
    lines, total = sum_terms(left.data[i], right.data[j],
                              f"{left.symbol}[{i}]", f"{right.symbol}[{j}]")
    return f"{stage.symbol}[{i},{j}] = {left.symbol}[{i}]·{right.symbol}[{j}]", lines, total


def _scale(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Scale)
    source = trace.stages[op.source]
    s = float(source.data[index].double())
    total = s * op.factor
    cell = ",".join(map(str, index))
    d_k = round(op.factor ** -2) if op.factor > 0 else 0  # a factor > 1 (a recorded `* 1.5`) is no 1/√d_k
    if d_k > 0 and math.isclose(op.factor, d_k ** -0.5, rel_tol=1e-6):
        return (f"{stage.symbol}[{cell}] = {source.symbol}[{cell}] / √d_k",
                [f"{fmt(s)} / √{d_k} = {fmt(s)} / {fmt(math.sqrt(d_k))}", f"= {fmt(total)}", f"({_(op.reason)})"],
                total)
    return (f"{stage.symbol}[{cell}] = {source.symbol}[{cell}] · {fmt(op.factor)}",
            [f"{fmt(s)} · {fmt(op.factor)}", f"= {fmt(total)}", f"({_(op.reason)})"], total)


def _masking(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Masking)
    i, j = index
    source = trace.stages[op.source]
    before = float(source.data[i, j].double())
    allowed = op.mask is None or bool(op.mask.tile(slice(i, i + 1), slice(j, j + 1))[0, 0])
    lines = [_("mask[{i},{j}] = {allowed}   (1 = may attend)").format(i=i, j=j, allowed=int(allowed))]
    given = None if op.mask is None else op.mask.as_given(i, j)
    if given is not None and allowed:  # where blocked, the reasons below say it
        lines.append(str(given))
    if op.temperature != 1:
        lines.append(_("divided by the temperature: {score} / {t}").format(score=fmt(before), t=f"{op.temperature:g}"))
    if allowed:
        total = before / op.temperature
        lines.append(_("kept: {value}").format(value=fmt(total)))
    else:
        total = FILLS[op.fill] if op.fill in FILLS else float(op.fill)  # a recorded fill may be any number
        assert op.mask is not None
        lines += [_("masked, {reason}").format(reason=reason) for reason in op.mask.reasons(i, j)]
        lines.append(str(Msg("the score {score} is replaced by the fill {fill}", score=fmt(before / op.temperature),
                                 fill=op.fill)))
    return f"M[{i},{j}]", lines, total


def _softmax(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Softmax)
    i, j = index
    if op.sink is not None:
        return _sink_softmax(trace, stage, index)
    row = row64(trace.stages[op.source].data[i])  # (keys,)
    top = finite_max(row)
    if top is None:
        return (f"A[{i},{j}]", [_("every key of this row is masked with -∞:"),
                                _("the row has nothing to attend to, so its weights are 0, as SDPA returns; "
                                  "a plain softmax would give NaN here")], 0.0)
    exps = shifted_exps(row, top)
    denom, mine = float(exps.sum()), float(exps[j])
    total = mine / denom
    m = trace.stages[op.source].symbol
    return (f"A[{i},{j}] = exp({m}[{i},{j}] − max) / Σ_k exp({m}[{i},k] − max)",
            [_("max of row {i} = {top}").format(i=i, top=fmt(top)),
             f"exp({fmt(float(row[j]))} − {fmt(top)}) = {fmt(mine)}",
             f"Σ_k = {first_terms(exps)} = {fmt(denom)}", f"{fmt(mine)} / {fmt(denom)} = {fmt(total)}"], total)


def _weighted_sum(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.WeightedSum)
    i, j = index
    weights, values = trace.stages[op.weights], trace.stages[op.values]
    lines, total = sum_terms(weights.data[i], values.data[:, j],
                              f"{weights.symbol}[{i}]", f"{values.symbol}[:,{j}]")
    lines[0] = f"Σ_k {weights.symbol}[{i},k]·{values.symbol}[k,{j}]  " + _(
        "(weights × column {j} of the values)").format(j=j) + " ="
    return f"{stage.symbol}[{i},{j}] = Σ_k {weights.symbol}[{i},k] {values.symbol}[k,{j}]", lines, total


def _tanh_of_sum(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.TanhOfSum)
    i, j, h = index
    left, right = trace.stages[op.left], trace.stages[op.right]
    a, b = float(left.data[i, h].double()), float(right.data[j, h].double())
    total = math.tanh(a + b)
    return (f"E[{i},{j},{h}] = tanh({left.symbol}[{i}] + {right.symbol}[{j}])[{h}]",
            [f"{left.symbol}[{i},{h}] = {fmt(a)}", f"{right.symbol}[{j},{h}] = {fmt(b)}",
             f"tanh({fmt(a)} + {fmt(b)}) = tanh({fmt(a + b)}) = {fmt(total)}"], total)


def _tanh_of_pair(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.TanhOfPair)
    i, j, h = index
    pair = torch.cat([row64(trace.stages[op.query].data[i]), row64(trace.stages[op.key].data[j])])
    lines, inner = sum_terms(trace.params[op.weight][h], pair, f"{op.weight}[{h}]",
                              f"[q_{i};k_{j}]")
    if op.bias is not None:
        b = float(trace.params[op.bias].reshape(-1)[h].double())
        inner += b
        lines.append(f"  + {op.bias}[{h}] ({fmt(b)}) = {fmt(inner)}")
    total = math.tanh(inner)
    lines.append(f"tanh({fmt(inner)}) = {fmt(total)}")
    return f"E[{i},{j},{h}] = tanh({op.weight}[q_{i}; k_{j}])[{h}]", lines, total


def _reduce(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Reduce)
    i, j = index
    energy = trace.stages[op.source]
    lines, total = sum_terms(trace.params[op.vector], energy.data[i, j],
                              op.vector, f"E[{i},{j}]")
    if op.bias is not None:
        b = float(trace.params[op.bias].reshape(-1)[0].double())
        total += b
        lines.append(f"  + {op.bias} ({fmt(b)}) = {fmt(total)}")
    return f"{stage.symbol}[{i},{j}] = {op.vector}ᵀ E[{i},{j}]", lines, total


def _concat(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Concat)
    i, j = index
    col = j
    for part in op.parts:  # parts may differ in width (an MLA key: its own part, then the shared rotary key)
        source = trace.stages[part]
        if col < source.shape[-1]:
            break
        col -= source.shape[-1]
    value = float(source.data[i, col].double())
    return (f"{stage.symbol}[{i},{j}]",
            [_("column {j} = column {col} of {source}").format(j=j, col=col, source=source.key), f"= {fmt(value)}"],
            value)


def _stack(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Stack)
    row, j = index
    source = trace.stages[op.parts[row]]
    value = float(source.data[0, j].double())
    return (f"{stage.symbol}[{row},{j}] = α_{row},{j}",
            [_("row {row} is the weights of decoder step {row} (output {token})").format(
                row=row, token=repr(trace.query_tokens[row])),
             _("weight on input {j} ({token}) = {value}").format(j=j, token=repr(trace.key_tokens[j]),
                                                                 value=fmt(value))],
            value)


def _mean(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Mean)
    parts = [float(trace.stages[p].data[index].double()) for p in op.parts]
    total = math.fsum(parts) / len(parts)
    cell = ",".join(map(str, index))
    names = ", ".join(trace.stages[p].key for p in op.parts[:MAX_TERMS]) + (" …" if len(parts) > MAX_TERMS else "")
    return (f"{stage.symbol}[{cell}] = mean of {len(parts)} stages",
            [names, f"({' + '.join(fmt(x) for x in parts[:MAX_TERMS])}{' + …' if len(parts) > MAX_TERMS else ''})"
                    f" / {len(parts)}", f"= {fmt(total)}"], total)


def _sink_softmax(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    """A weight of a row that a sink logit joined: exp(M[i,j] − max) / (Σ_k exp(M[i,k] − max) + exp(s − max))."""
    op = stage.op
    assert isinstance(op, ops.Softmax) and op.sink is not None
    i, j = index
    source = trace.stages[op.source]
    sink = param(trace, op.sink, op.sink_index)
    row = sink_row(source, i, sink)
    total = row.exp(j) / row.denom
    m = source.symbol
    return (f"A[{i},{j}] = exp({m}[{i},{j}] − max) / (Σ_k exp({m}[{i},k] − max) + exp(s − max))",
            [*row.opening(i, op.sink_index),
             f"exp({fmt(float(source.data[i, j].double()))} − {fmt(row.top)}) = {fmt(row.exp(j))}",
             row.total(),
             f"{fmt(row.exp(j))} / {fmt(row.denom)} = {fmt(total)}",
             _("the sink's share is dropped, so row {i} sums to 1 − p_sink").format(i=i)], total)


EXPLAINERS: dict[type[ops.Op], Explainer] = {
    ops.Given: _given, ops.Lookup: _lookup, ops.Sinusoid: _sinusoid, ops.Sum: _sum, ops.Linear: _linear,
    ops.Identity: _identity,
    ops.Columns: _columns, ops.Dot: _dot, ops.Scale: _scale, ops.Masking: _masking, ops.Softmax: _softmax,
    ops.WeightedSum: _weighted_sum, ops.TanhOfSum: _tanh_of_sum, ops.TanhOfPair: _tanh_of_pair,
    ops.Reduce: _reduce, ops.Concat: _concat, ops.Stack: _stack, ops.Mean: _mean,
}
