"""The arithmetic of the stages a layer may hold between projection and scores: a per-head q/k norm,
a rotation of part of a head (or of interleaved pairs), and a logit soft cap; beside the weights, how
much each key moves a query's output through the head (`moved`); and a Gated DeltaNet layer's short causal
convolution and gated norm around its state.

`EXPLAINERS` maps each of these op kinds to its explainer; `explain.cell` puts it in the
registry, so the inspector explains a Qwen3 or Gemma cell the same way as any other,
recomputed in float64 from the trace's own tensors and compared with the stored cell.
"""

from __future__ import annotations

import math

import torch

from attn_tui.explain.common import Explained, Explainer, first_terms, fmt, param, row64, sum_terms
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.stage import Stage, Trace


def _head_norm(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.HeadNorm)
    p, j = index
    source = trace.stages[op.source]
    c = op.column + j  # the cell's place in the normed row and in the weight
    if op.whole:  # the whole projection's row: every head's row side by side (OLMo-2)
        x = torch.cat([row64(trace.stages[at].data[p]) for at in op.whole])  # (count·d_h,)
        span = dict(p=p, heads=len(op.whole), d=x.numel(), a=op.column, b=op.column + source.data.shape[-1] - 1)
        squares = _("mean of the squares of row {p} of the whole projection ({heads} heads, {d} dimensions; this "
                    "head's are {a}…{b}):").format(**span)
        spread = _("mean {mean}, variance {var} over row {p} of the whole projection ({heads} heads, {d} "
                   "dimensions)")
    else:
        x = row64(source.data[p])  # (d_h,)
        span = dict(p=p, d=x.numel())
        squares = _("mean of the squares of {name}[{p}] over its {d} dimensions:").format(name=source.symbol, p=p,
                                                                                           d=x.numel())
        spread = _("mean {mean}, variance {var} over the head's {d} dimensions")
    weight = float(trace.params[op.weight].reshape(-1)[c].double()) + op.offset
    shown_w = f"(1 + {fmt(weight - op.offset)})" if op.offset else fmt(weight)
    if op.kind == "rms":
        mean_sq = float(x.pow(2).mean())
        root = math.sqrt(mean_sq + op.eps)
        total = float(x[c]) / root * weight
        lines = [squares,
                 f"({first_terms(x.pow(2))}) / {x.numel()} = {fmt(mean_sq)}",
                 f"√({fmt(mean_sq)} + {op.eps:g}) = {fmt(root)}",
                 f"{fmt(float(x[c]))} / {fmt(root)} · {shown_w} = {fmt(total)}"]
        return f"{stage.symbol}[{p},{j}] = {source.symbol}[{p},{j}] / rms · w[{c}]", lines, total
    mean, var = float(x.mean()), float(x.var(unbiased=False))
    root = math.sqrt(var + op.eps)
    bias = 0.0 if op.bias is None else float(trace.params[op.bias].reshape(-1)[c].double())
    total = (float(x[c]) - mean) / root * weight + bias
    lines = [spread.format(mean=fmt(mean), var=fmt(var), **span),
             f"({fmt(float(x[c]))} − {fmt(mean)}) / √({fmt(var)} + {op.eps:g}) · {shown_w} + {fmt(bias)}",
             f"= {fmt(total)}"]
    return f"{stage.symbol}[{p},{j}] = ({source.symbol}[{p},{j}] − mean) / σ · w[{c}] + b[{c}]", lines, total


def _partial_rotary(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.PartialRotary)
    p, j = index
    source = trace.stages[op.source]
    x = row64(source.data[p]).tolist()
    if j >= op.rotated:
        return (f"{stage.symbol}[{p},{j}] = {source.symbol}[{p},{j}]",
                [_("dimension {j} is past the {r} that are turned: it passes unchanged").format(j=j, r=op.rotated),
                 f"= {fmt(x[j])}"], x[j])
    r = op.rotated
    if op.interleaved:
        i, first = j // 2, j % 2 == 0
        partner = j + 1 if first else j - 1
    else:
        i, first = j % (r // 2), j < r // 2
        partner = j + r // 2 if first else j - r // 2
    theta = op.base ** (-2 * i / r) if op.inv_freq is None else param(trace, op.inv_freq, i)
    p += op.first  # row p of a step's query is the token at position first + p
    angle = p * theta
    cos, sin = math.cos(angle) * op.scaling, math.sin(angle) * op.scaling
    total = x[j] * cos - x[partner] * sin if first else x[j] * cos + x[partner] * sin
    sign = "−" if first else "+"
    lines = [_("pair ({a}, {b}) of {name}[{p}] is turned by the angle p·θ_{i}").format(
                 a=min(j, partner), b=max(j, partner), name=source.symbol, p=p, i=i),
             f"θ_{i} = {op.base:g}^(−2·{i}/{r}) = {fmt(theta)}" if op.inv_freq is None else
             _("θ_{i} = {theta}: the model's own frequency ({name}[{i}], its rope scaling included)").format(
                 i=i, theta=fmt(theta), name=op.inv_freq),
             f"cos = {fmt(cos)}, sin = {fmt(sin)}",
             f"x_{j}·cos {sign} x_{partner}·sin = {fmt(x[j])}·{fmt(cos)} {sign} {fmt(x[partner])}·{fmt(sin)}",
             f"= {fmt(total)}"]
    return f"{stage.symbol}[{p},{j}] = (x_{j}·cos {sign} x_{partner}·sin)", lines, total


def _soft_cap(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.SoftCap)
    source = trace.stages[op.source]
    s = float(source.data[index].double())
    total = op.cap * math.tanh(s / op.cap)
    cell = ",".join(map(str, index))
    return (f"{stage.symbol}[{cell}] = cap·tanh({source.symbol}[{cell}] / cap)",
            [f"{op.cap:g}·tanh({fmt(s)} / {op.cap:g}) = {op.cap:g}·tanh({fmt(s / op.cap)})", f"= {fmt(total)}",
             _("a large score is pressed towards ±{cap}; a small one passes almost unchanged").format(
                 cap=f"{op.cap:g}")], total)


def _moved(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    """‖α_ij · v_j·W_O,hᵀ‖ recomputed in float64: the value row through the head's columns of W_O, its norm."""
    op = stage.op
    assert isinstance(op, ops.MovedNorm)
    i, j = index
    alpha = float(trace.stages[op.weights].data[i, j].double())
    v = row64(trace.stages[op.value].data[j])  # (d_h,)
    w = trace.params[op.w_o].double()[:, op.column:op.column + v.numel()]  # (d, d_h): the head's columns
    f = w @ v  # (d,): what key j adds to the residual stream through this head, before its weight
    norm = float(f.norm())
    total = abs(alpha) * norm
    lines = [_("f = v_{j}·W_O[:, {a}…{b}]ᵀ: value row {j} through this head's {d} columns of W_O, into the model's "
               "{width} dimensions").format(j=j, a=op.column, b=op.column + v.numel() - 1, d=v.numel(),
                                            width=f.numel()),
             "f = [" + ", ".join(fmt(x) for x in f[:6].tolist()) + (", …]" if f.numel() > 6 else "]"),
             f"‖f‖ = √({first_terms(f.pow(2))}) = {fmt(norm)}",
             f"A[{i},{j}] · ‖f‖ = {fmt(alpha)} · {fmt(norm)} = {fmt(total)}",
             _("a large weight on a key whose f is small moves little (Kobayashi et al. 2020)")]
    return f"{stage.symbol}[{i},{j}] = ‖A[{i},{j}] · v_{j}·W_O,hᵀ‖", lines, total


def _gated_norm(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.GatedNorm)
    i, j = index
    source = trace.stages[op.source]
    row = row64(source.data[i])
    root = math.sqrt(float((row * row).mean()) + op.eps)
    weight = param(trace, op.weight, j)
    z = float(trace.operand(op.gate)[i, j].double())
    silu = z / (1 + math.exp(-z))
    total = float(row[j]) / root * weight * silu
    return (f"{stage.symbol}[{i},{j}] = {source.symbol}[{i},{j}] / rms · w[{j}] · SiLU(z[{i},{j}])",
            [f"rms = √(mean_m {source.symbol}[{i},m]² + {op.eps:g}) = {fmt(root)}",
             f"SiLU({fmt(z)}) = {fmt(silu)}",
             f"{fmt(float(row[j]))} / {fmt(root)} · {fmt(weight)} · {fmt(silu)} = {fmt(total)}"], total)


def _conv(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.CausalConv)
    t, j = index
    c = op.offset + j
    weight = row64(trace.params[op.weight][c])  # (K,)
    kernel = weight.numel()
    column = row64(trace.inputs[op.source][:, c])  # (N,): the channel before the convolution
    rows = [t - kernel + 1 + i for i in range(kernel)]
    read = torch.tensor([float(column[r]) if r >= 0 else 0.0 for r in rows], dtype=torch.float64)
    lines, dot = sum_terms(weight, read, "w", "x")
    total = dot / (1 + math.exp(-dot))
    return (f"{stage.symbol}[{t},{j}] = SiLU(Σ_i w[{c}, i]·x[{t} − {kernel - 1} + i, {c}])",
            [_("channel {c} of the projection, rows {a}…{b} (a row before 0 reads 0)").format(c=c, a=rows[0], b=t),
             *lines, f"SiLU({fmt(dot)}) = {fmt(total)}"], total)


EXPLAINERS: dict[type[ops.Op], Explainer] = {ops.HeadNorm: _head_norm, ops.PartialRotary: _partial_rotary,
                                              ops.SoftCap: _soft_cap, ops.MovedNorm: _moved,
                                              ops.GatedNorm: _gated_norm, ops.CausalConv: _conv}
