"""The arithmetic of differential attention's own ops: λ from its four vectors, a cell of A₁ − λ·A₂, the head norm.

`EXPLAINERS` maps each of these op kinds to its explainer; `explain.cell` puts it in the
registry, so the inspector explains a `diff` variant's or a DiffLlama layer's cell the same
way as any other, recomputed in float64 from the trace's own tensors.
"""

from __future__ import annotations

import math

from attn_tui.attention.variants.diff import DiffNorm, DiffWeights, LambdaTerms
from attn_tui.explain.common import Explained, Explainer, first_terms, fmt, row64, sum_terms
from attn_tui.i18n import _
from attn_tui.trace.ops import Op
from attn_tui.trace.stage import Stage, Trace


def _init_lines(depth: int) -> tuple[list[str], float]:
    init = 0.8 - 0.6 * math.exp(-0.3 * depth)
    return [_("λ_init depends only on the layer's depth (counted from 0): deeper layers subtract more"),
            f"λ_init = 0.8 − 0.6·exp(−0.3·{depth}) = 0.8 − 0.6·{fmt(math.exp(-0.3 * depth))} = {fmt(init)}"], init


def _exp_dot(trace: Trace, left: str, right: str, n: int) -> tuple[list[str], float]:
    lines, dot = sum_terms(trace.params[left], trace.params[right], f"λ_q{n}", f"λ_k{n}")
    total = math.exp(dot)
    return [*lines, f"exp({fmt(dot)}) = {fmt(total)}"], total


def _lambda_terms(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, LambdaTerms)
    column = index[1]
    if column == 0:
        lines, total = _exp_dot(trace, op.q1, op.k1, 1)
        return "exp(λ_q1·λ_k1)", [_("two learned vectors; their dot product's exponential pushes λ up"),
                                   *lines], total
    if column == 1:
        lines, total = _exp_dot(trace, op.q2, op.k2, 2)
        return "exp(λ_q2·λ_k2)", [_("two more learned vectors; their term pulls λ down"), *lines], total
    init_lines, init = _init_lines(op.depth)
    if column == 2:
        return "λ_init", init_lines, init
    one_lines, one = _exp_dot(trace, op.q1, op.k1, 1)
    two_lines, two = _exp_dot(trace, op.q2, op.k2, 2)
    total = one - two + init
    return ("λ = exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init",
            [*one_lines, *two_lines, *init_lines, f"λ = {fmt(one)} − {fmt(two)} + {fmt(init)} = {fmt(total)}",
             _("λ is learned per layer and shared by its heads: how much of the second map to subtract")], total)


def _diff_weights(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, DiffWeights)
    i, j = index
    first, second = trace.stages[op.first], trace.stages[op.second]
    lam = float(trace.stages[op.lam].data[0, 3].double())
    a1, a2 = float(first.data[i, j].double()), float(second.data[i, j].double())
    total = a1 - lam * a2
    lines = [_("{a1} = {v1}: how much query {i} attends to key {j} in the first map").format(
                 a1=f"A₁[{i},{j}]", v1=fmt(a1), i=i, j=j),
             _("{a2} = {v2}: the same cell of the second map").format(a2=f"A₂[{i},{j}]", v2=fmt(a2)),
             f"λ = {fmt(lam)}",
             f"{fmt(a1)} − {fmt(lam)}·{fmt(a2)} = {fmt(total)}",
             _("negative: the second map attends here more than the first, so this key is cancelled as noise")
             if total < 0 else _("what both maps share is cancelled; what only the first map sees remains")]
    return f"D[{i},{j}] = A₁[{i},{j}] − λ·A₂[{i},{j}]", lines, total


def _diff_norm(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, DiffNorm)
    p, j = index
    source = trace.stages[op.source]
    init = float(trace.stages[op.lam].data[0, 2].double())
    x = row64(source.data[p])  # (2d,)
    mean_sq = float(x.pow(2).mean())
    root = math.sqrt(mean_sq + op.eps)
    total = (1 - init) * float(x[j]) / root
    lines = [_("mean of the squares of {name}[{p}] over its {d} dimensions:").format(name=source.symbol, p=p,
                                                                                       d=x.numel()),
             f"({first_terms(x.pow(2))}) / {x.numel()} = {fmt(mean_sq)}",
             f"√({fmt(mean_sq)} + {op.eps:g}) = {fmt(root)}",
             f"(1 − {fmt(init)})·{fmt(float(x[j]))} / {fmt(root)} = {fmt(total)}",
             _("(1 − λ_init) gives back the size that subtracting λ_init of the second map took away")]
    return f"{stage.symbol}[{p},{j}] = (1 − λ_init)·{source.symbol}[{p},{j}] / rms", lines, total


EXPLAINERS: dict[type[Op], Explainer] = {LambdaTerms: _lambda_terms, DiffWeights: _diff_weights,
                                              DiffNorm: _diff_norm}
