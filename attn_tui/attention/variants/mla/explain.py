"""The arithmetic of multi-head latent attention's own ops: a score made of two dot products, and a query
taken into the latent space through W_uk (the absorbed form).

`EXPLAINERS` maps each op kind to its explainer; `explain.cell` puts it in the registry, so the inspector
explains an MLA score (the variant's or a DeepSeek layer's) as its no-position part plus its rotary part,
each recomputed in float64 from the trace's own tensors.
"""

from __future__ import annotations

import math

from attn_tui.attention.variants.mla import Absorb, DotSum, LatentKeyScale, NormedAbsorb, NormedLatentScore
from attn_tui.explain.common import Explained, Explainer, fmt, row64, sum_terms
from attn_tui.i18n import _
from attn_tui.trace.ops import Op
from attn_tui.trace.stage import Stage, Trace


def _dot_sum(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, DotSum)
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
    assert isinstance(op, Absorb)
    i, m = index
    source = trace.stages[op.source]
    x = row64(source.data[i])  # (d_nope,)
    rows = trace.params[op.weight][op.offset:op.offset + x.numel(), m].double()  # (d_nope,) column m of the rows
    terms, total = sum_terms(x, rows, f"{source.symbol}[{i}]", f"{op.weight}[{op.offset}…, {m}]")
    lines = [_("column {m} of rows {a}…{b} of {weight}: the up-projection a key would have used, folded into the "
               "query").format(m=m, a=op.offset, b=op.offset + x.numel() - 1, weight=op.weight), *terms]
    return f"{stage.symbol}[{i},{m}] = Σ_c {source.symbol}[{i},c]·{op.weight}[{op.offset}+c,{m}]", lines, total


def _latent_key_scale(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, LatentKeyScale)
    j = index[0]
    latent, rot = trace.stages[op.latent], trace.stages[op.rot]
    c = row64(latent.data[j])  # (r,)
    w_uk = trace.params[op.weight][op.first:op.last].double().cpu()  # (rows, r)
    gram = w_uk.T @ w_uk  # (r, r)
    content = float(c @ gram @ c)
    turned = float(row64(rot.data[j]).pow(2).sum())
    width = op.last - op.first + op.copies * rot.data.shape[-1]
    mean = (content + op.copies * turned) / width
    total = 1 / math.sqrt(mean + op.eps)
    lines = [_("‖{c}[{j}]·{w}ᵀ‖² = {c}[{j}]·G·{c}[{j}] with G = {w}ᵀ{w} ({r}×{r}): the rebuilt key's size, the key "
               "never built").format(c=latent.symbol, j=j, w=f"{op.weight}[{op.first}…{op.last - 1}]", r=c.numel()),
             f"  = {fmt(content)}",
             f"‖{rot.symbol}[{j}]‖² = {fmt(turned)}" + (f"  (×{op.copies})" if op.copies > 1 else ""),
             f"({fmt(content)} + {op.copies}·{fmt(turned)}) / {width} = {fmt(mean)}",
             f"1 / √({fmt(mean)} + {op.eps:g}) = {fmt(total)}"]
    return f"{stage.symbol}[{j}] = 1/√(mean of k[{j}]² + eps)", lines, total


def _normed_absorb(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, NormedAbsorb)
    i, m = index
    source = trace.stages[op.source]
    x = row64(source.data[i])[:op.width] * trace.params[op.norm][op.column:op.column + op.width].double().cpu()
    rows = trace.params[op.weight][op.offset:op.offset + op.width, m].double()  # (width,)
    terms, total = sum_terms(x, rows, f"({source.symbol}⊙{op.norm})[{i}]", f"{op.weight}[{op.offset}…, {m}]")
    lines = [_("the normed query's first {d} numbers times the key norm's weight {norm}, then column {m} of rows "
               "{a}…{b} of {weight}: the key's weight and up-projection moved to the query").format(
                 d=op.width, norm=op.norm, m=m, a=op.offset, b=op.offset + op.width - 1, weight=op.weight), *terms]
    return (f"{stage.symbol}[{i},{m}] = Σ_c {source.symbol}[{i},c]·{op.norm}[c]·{op.weight}[{op.offset}+c,{m}]",
            lines, total)


def _normed_latent_score(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, NormedLatentScore)
    i, j = index
    absorbed, latent, source = trace.stages[op.absorbed], trace.stages[op.latent], trace.stages[op.source]
    rot, scale = trace.stages[op.rot], trace.stages[op.scale]
    first_terms, first = sum_terms(absorbed.data[i], latent.data[j], f"{absorbed.symbol}[{i}]",
                                   f"{latent.symbol}[{j}]")
    d_rope = rot.data.shape[-1]
    start = op.column + op.d_nope
    q_rot = row64(source.data[i])[op.d_nope:op.d_nope + d_rope] * trace.params[op.norm][start:start + d_rope].double()
    second_terms, second = sum_terms(q_rot, rot.data[j], f"({source.symbol}⊙{op.norm})[{i}, rot]",
                                     f"{rot.symbol}[{j}]")
    r = float(scale.data[j, 0].double())
    total = r * (first + second)
    lines = [*first_terms, *second_terms,
             f"{fmt(r)}·({fmt(first)} + {fmt(second)}) = {fmt(total)}",
             _("the key's norm factor multiplies the whole score: a normed key, though no key was built")]
    return f"{stage.symbol}[{i},{j}] = {scale.symbol}[{j}]·({absorbed.symbol}·{latent.symbol} + q_rot·k_rot)", lines, \
        total


EXPLAINERS: dict[type[Op], Explainer] = {DotSum: _dot_sum, Absorb: _absorb,
                                             LatentKeyScale: _latent_key_scale, NormedAbsorb: _normed_absorb,
                                             NormedLatentScore: _normed_latent_score}
