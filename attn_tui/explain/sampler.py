"""The arithmetic of a writing's own stages: the sampler's after a model's last layer (the cut, the
probabilities, the choice) and the weights rows written so far.

The logits are a `Linear` (the last hidden state times the output embedding) and the temperature a `Scale`,
explained by `classic`; these three are the sampler's own. Each recomputes its cell in float64 from the
trace's tensors and the numbers the op kept, so the inspector's claim is checked against the stored cell.
"""

from __future__ import annotations

import math

from attn_tui.explain.common import Explained, Explainer, fmt
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.stage import Stage, Trace


def _cut(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.VocabCut)
    i, j = index
    x = float(trace.stages[op.source].data[i, j].double())
    rank, before = op.ranks[j], op.before[j]
    token = repr(stage.axes[1].labels[j])
    lines = [_("{token} ranks {rank} in the whole vocabulary (0 = the likeliest)").format(token=token, rank=rank)]
    kept = True
    if op.top_k:
        inside = rank < op.top_k
        kept &= inside
        lines.append(_("top-k {k}: rank {rank} is {verdict}").format(
            k=op.top_k, rank=rank, verdict=_("kept") if inside else _("cut")))
    if op.top_p < 1:
        inside = before < op.top_p
        kept &= inside
        lines.append(_("top-p {p}: the tokens ranked above it hold {mass} of the probability, so it is {verdict}")
                     .format(p=f"{op.top_p:g}", mass=fmt(before), verdict=_("kept") if inside else _("cut")))
    total = x if kept else -math.inf
    lines.append(f"= {fmt(total)}")
    return f"{stage.symbol}[{i},{j}] = " + ("x" if kept else "−∞"), lines, total


def _vocab_softmax(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.VocabSoftmax)
    i, j = index
    x = float(trace.stages[op.source].data[i, j].double())
    total = 0.0 if math.isinf(x) and x < 0 else math.exp(x - op.log_total)
    lines = [_("softmax over all {n} tokens of the vocabulary, not only the columns shown:").format(n=f"{op.vocab:,}"),
             f"log Σ_v exp(x_v) = {fmt(op.log_total)}",
             f"exp({fmt(x)} − {fmt(op.log_total)}) = {fmt(total)}"]
    return f"{stage.symbol}[{i},{j}] = exp(x_j − log Σ exp(x))", lines, total


def _chosen(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Chosen)
    i, j = index
    probs = trace.stages[op.source].data[i]
    chosen = stage.axes[1].labels[op.column]
    if op.drawn:
        why = _("drawn from the probabilities by a generator seeded {seed}: {token} (p = {p})").format(
            seed=op.seed, token=repr(chosen), p=fmt(float(probs[op.column].double())))
    else:
        why = _("greedy: the largest probability is {token}'s (p = {p})").format(
            token=repr(chosen), p=fmt(float(probs.max().double())))
    total = 1.0 if j == op.column else 0.0
    return f"{stage.symbol}[{i},{j}] = [j = {op.column}]", [why, f"= {fmt(total)}"], total


def _written(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.Written)
    r, j = index
    place, row = op.rows[r]
    source = trace.at(place)
    step = "" if place.step is None else str(place.step)
    lines = [_("row {r} is row {row} of the weights of step {step} (query {token})").format(
        r=r, row=row, step=step, token=repr(source.axes[0].labels[row]))]
    if j >= source.shape[1]:
        lines.append(_("key {j} came after that step: nothing to weigh yet, 0").format(j=j))
        return f"{stage.symbol}[{r},{j}] = 0", lines, 0.0
    value = float(source.data[row, j].double())
    lines.append(f"= {fmt(value)}")
    return f"{stage.symbol}[{r},{j}] = A@t{step}[{row},{j}]", lines, value


EXPLAINERS: dict[type[ops.Op], Explainer] = {ops.VocabCut: _cut, ops.VocabSoftmax: _vocab_softmax,
                                              ops.Chosen: _chosen, ops.Written: _written}
