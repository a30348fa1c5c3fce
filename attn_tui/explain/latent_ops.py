"""The arithmetic of multi-head latent attention's own ops: a score made of two dot products, and a query
taken into the latent space through W_uk (the absorbed form).

`EXPLAINERS` maps each op kind to its explainer; `explain.cell` puts it in the registry, so the inspector
explains an MLA score (the variant's or a DeepSeek layer's) as its no-position part plus its rotary part,
each recomputed in float64 from the trace's own tensors.
"""

from __future__ import annotations

import math

from attn_tui.explain.common import Explained, Explainer, fmt, row64, sum_terms
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.stage import Stage, Trace


def _dot_sum(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.DotSum)
    i, j = index
    lines: list[str] = []
    parts: list[float] = []
    names = []
    for left_at, right_at in op.pairs:
        left, right = trace.stages[left_at], trace.stages[right_at]
        terms, part = sum_terms(left.data[i], right.data[j], f"{left.symbol}[{i}]", f"{right.symbol}[{j}]")
        lines.append(_("{left}[{i}]·{right}[{j}] over {d} dimensions:").format(
            left=left.symbol, i=i, right=right.symbol, j=j, d=left.data.shape[-1]))
        lines.extend("  " + line for line in terms)
        parts.append(part)
        names.append(f"{left.symbol}[{i}]·{right.symbol}[{j}]")
    total = math.fsum(parts)
    lines.append(" + ".join(fmt(x) for x in parts) + f" = {fmt(total)}")
    lines.append(_("the first part compares what the tokens hold, the last where they are"))
    return f"{stage.symbol}[{i},{j}] = " + " + ".join(names), lines, total


def _absorb(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Absorb)
    i, m = index
    source = trace.stages[op.source]
    x = row64(source.data[i])  # (d_nope,)
    rows = trace.params[op.weight][op.offset:op.offset + x.numel(), m].double()  # (d_nope,) column m of the rows
    terms, total = sum_terms(x, rows, f"{source.symbol}[{i}]", f"{op.weight}[{op.offset}…, {m}]")
    lines = [_("column {m} of rows {a}…{b} of {weight}: the up-projection a key would have used, folded into the "
               "query").format(m=m, a=op.offset, b=op.offset + x.numel() - 1, weight=op.weight), *terms]
    return f"{stage.symbol}[{i},{m}] = Σ_c {source.symbol}[{i},c]·{op.weight}[{op.offset}+c,{m}]", lines, total


EXPLAINERS: dict[type[ops.Op], Explainer] = {ops.DotSum: _dot_sum, ops.Absorb: _absorb}
