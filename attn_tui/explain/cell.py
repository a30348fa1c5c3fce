"""The arithmetic of one cell of any stage, recomputed from the trace's own tensors through the stage's op.

One explainer per kind of operation, whatever the source: a variant, a real model, a
trained decoder. The app's inspector shows the lines; the tests check that every
recomputed `total` equals the stage's own cell, so what the inspector claims is what
was computed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from attn_tui.i18n import Msg, _
from attn_tui.trace import ops
from attn_tui.trace.masks import FILLS
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Stage, Trace

MAX_TERMS = 8  # terms written out before the rest are summarised as "…"


@dataclass(frozen=True)
class Arithmetic:
    """How one cell came to be: a headline, the terms written out, and their result.

    `total` is recomputed here in float64; `expected` is the stage's own cell. They
    agree up to the stage's dtype rounding, which the tests assert.
    """

    title: str
    lines: list[str] = field(default_factory=list)
    total: float = 0.0
    expected: float = 0.0
    tolerance: float = 1e-4  # relative; wider for a stage kept in float16 or bfloat16 (see `tolerance_of`)

    @property
    def matches(self) -> bool:
        if math.isinf(self.total) or math.isinf(self.expected) or math.isnan(self.expected):
            return self.total == self.expected or (math.isnan(self.total) and math.isnan(self.expected))
        return abs(self.total - self.expected) <= self.tolerance * max(1.0, abs(self.expected))


def tolerance_of(dtype: torch.dtype) -> float:
    """How far a float64 recomputation may sit from a cell stored in `dtype`: its rounding, a few units of it.

    A bfloat16 cell keeps 8 bits of mantissa; asking it to agree to 1e-4 would call
    every half-precision model's arithmetic wrong.
    """
    if not dtype.is_floating_point:
        return 1e-4
    return max(1e-4, 4 * torch.finfo(dtype).eps)


def fmt(x: float) -> str:
    if math.isinf(x):
        return "-∞" if x < 0 else "+∞"
    if math.isnan(x):
        return "NaN"
    return f"{x:.4g}"


def _floats(t: torch.Tensor) -> list[float]:
    return row64(t).tolist()


def row64(t: torch.Tensor) -> torch.Tensor:
    """`t` flattened to float64 on the CPU, where a cell's arithmetic is redone.

    A cell can sum a whole row (a weight's softmax, an output's Σ_k over 16k keys): torch sums it, and
    only the terms written out become Python floats, so the inspector costs a row, not a Python loop.
    """
    return t.detach().to(device="cpu", dtype=torch.float64).flatten()


def finite_max(row: torch.Tensor) -> float | None:
    """The largest finite entry of a float64 row; None when every entry is infinite (a row masked whole)."""
    finite = row[~row.isinf()]
    return float(finite.max()) if finite.numel() else None


def shifted_exps(row: torch.Tensor, top: float) -> torch.Tensor:
    """exp(x − top) for each entry of a float64 row; 0 for an infinite entry (a masked key)."""
    return torch.where(row.isinf(), 0.0, (row - top).exp())


def first_terms(terms: torch.Tensor) -> str:
    """The first MAX_TERMS numbers of a row joined by ' + ', then '…' if there are more."""
    return " + ".join(fmt(t) for t in terms[:MAX_TERMS].tolist()) + (" + …" if terms.numel() > MAX_TERMS else "")


def _sum_terms(a: torch.Tensor, b: torch.Tensor, a_name: str, b_name: str) -> tuple[list[str], float]:
    """Lines for Σ a_m·b_m and the float64 sum; long sums show the first terms then '…'."""
    x, y = row64(a), row64(b)
    total = float((x * y).sum())
    shown = [f"{fmt(p)}·{fmt(q)}" for p, q in zip(x[:MAX_TERMS].tolist(), y[:MAX_TERMS].tolist())]
    more = " + … " + _("({n} more)").format(n=x.numel() - MAX_TERMS) if x.numel() > MAX_TERMS else ""
    return [f"Σ_m {a_name}[m]·{b_name}[m] =", "  " + " + ".join(shown) + more, f"  = {fmt(total)}"], total


def _name(trace: Trace, ref: Place | str) -> str:
    return ref if isinstance(ref, str) else trace.stages[ref].symbol


Explained = tuple[str, list[str], float]
Explainer = Callable[[Trace, Stage, tuple[int, ...]], Explained]


def explain(trace: Trace, place: Place, index: tuple[int, ...]) -> Arithmetic:
    """The arithmetic behind `stage[index]` for the stage at `place`; one index per axis of the stage."""
    import attn_tui.explain.layer_ops  # (registers the per-head norm, the partial rotation and the soft cap)
    import attn_tui.explain.modern  # noqa: F401  (registers its explainers on first use)

    stage = trace.stages[place]
    title, lines, total = _EXPLAINERS[type(stage.op)](trace, stage, index)
    return Arithmetic(title, lines, total, float(stage.data[index].double()), tolerance_of(stage.data.dtype))


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
    source = _name(trace, op.source)
    lines, total = _sum_terms(trace.operand(op.source)[i], weight[row],
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
    source = _name(trace, op.source)
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
    lines, total = _sum_terms(left.data[i], right.data[j],
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
        from attn_tui.explain.modern import sink_softmax

        return sink_softmax(trace, stage, index)
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
    lines, total = _sum_terms(weights.data[i], values.data[:, j],
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
    lines, inner = _sum_terms(trace.params[op.weight][h], pair, f"{op.weight}[{h}]",
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
    lines, total = _sum_terms(trace.params[op.vector], energy.data[i, j],
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
    width = trace.stages[op.parts[0]].shape[-1]
    part, col = divmod(j, width)
    source = trace.stages[op.parts[part]]
    value = float(source.data[i, col].double())
    return (f"C[{i},{j}]", [_("column {j} = column {col} of {source}").format(j=j, col=col, source=source.key),
                            f"= {fmt(value)}"], value)


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


_EXPLAINERS: dict[type, Explainer] = {
    ops.Given: _given, ops.Lookup: _lookup, ops.Sinusoid: _sinusoid, ops.Sum: _sum, ops.Linear: _linear,
    ops.Identity: _identity,
    ops.Columns: _columns, ops.Dot: _dot, ops.Scale: _scale, ops.Masking: _masking, ops.Softmax: _softmax,
    ops.WeightedSum: _weighted_sum, ops.TanhOfSum: _tanh_of_sum, ops.TanhOfPair: _tanh_of_pair,
    ops.Reduce: _reduce, ops.Concat: _concat, ops.Stack: _stack, ops.Mean: _mean,
}


def register(op: type, explainer: Explainer) -> None:
    """Add the explainer of an op kind (explain.modern registers today's ops: rotation, bias, sink, tiles)."""
    _EXPLAINERS[op] = explainer
