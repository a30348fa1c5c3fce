"""One recorded softmax → a Found: the slices laid out, the chain walked, the roles named in order.

The layout comes from how the code used the weights: the product with the values says
which dimensions are batch and heads, which are queries and keys. Without such a
product the softmax's own dimension is the keys. Leading dimensions become slices
(`slices.layout` says which are heads). A softmax the recogniser cannot place still
shows, as its scores and weights (`softmax_alone`).
"""

from __future__ import annotations

import math

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.chain import Chain
from attn_tui.sources.recorder.contract import rows_and_cols
from attn_tui.sources.recorder.energy import energy_roles, reduce_energy
from attn_tui.sources.recorder.found import (
    DotOp,
    Found,
    GivenOp,
    MaskOp,
    ReduceOp,
    Role,
    ScaleOp,
    SoftCapOp,
    SoftmaxOp,
    SumOp,
    WeightedSumOp,
)
from attn_tui.sources.recorder.logits import NotAttentionError, over_learned_rows
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import Operands, after_output, param_name, projection, unscaled
from attn_tui.sources.recorder.recognise import (
    UnrecognisedError,
    describe_factor,
    find_output,
    softmax_dim,
    softmax_input,
)
from attn_tui.sources.recorder.refs import Ref, operand_ref
from attn_tui.sources.recorder.slices import layout
from attn_tui.trace.masks import code_rule_name

MAX_SLICES = 256  # (batch item, head) slices of one call that become stages


def _softmax_lead(weights: Node, canonical: torch.Tensor) -> tuple[int, ...] | None:
    """The softmax's own leading dimensions (batch, heads) where the product after it read them folded into one
    (`probs.view(B * H, L, S) @ values`), its numbers in their order: the heads stay heads. None otherwise."""
    shape = tuple(weights.value.shape)
    if canonical.dim() != 3 or len(shape) < 4 or softmax_dim(weights) != len(shape) - 1:
        return None
    lead = shape[:-2]
    if math.prod(lead) != canonical.shape[0] or tuple(canonical.shape[1:]) != shape[-2:]:
        return None
    in_order = torch.equal(canonical.reshape(-1), torch.arange(canonical.numel()))
    return lead if in_order else None


def from_softmax(weights: Node, found: Found) -> None:
    """Fill `found` with the roles of the attention around one recorded softmax."""
    source = softmax_input(weights)
    if source is None:
        raise UnrecognisedError("the softmax reads no recorded tensor")
    if weights.value.dim() == 0:
        raise UnrecognisedError("a softmax of a single number")
    output = find_output(weights)
    if output is not None and output[1].shape[-1] != weights.value.shape[softmax_dim(weights)]:
        output = None  # the product reads part of each softmax row (a sink dropped): the rows are shown whole instead
    if output is not None:
        product, left, values, out_index, dropped = output
        canonical = left.index  # (*b, L, S): positions in the softmax's numbers
        unfolded = _softmax_lead(weights, canonical)
        if unfolded is not None:  # the product read batch and heads folded into one (bloom's view(B * H, L, S))
            canonical = canonical.reshape(*unfolded, *canonical.shape[1:])
            values = Ref(values.node, values.base, values.index.reshape(*unfolded, *values.index.shape[1:]))
            out_index = out_index.reshape(*unfolded, *out_index.shape[1:])
    else:
        canonical = torch.arange(weights.value.numel()).reshape(weights.value.shape).movedim(softmax_dim(weights), -1)
        if canonical.dim() == 1:
            canonical = canonical[None, :]
        values, dropped, product, out_index = None, None, None, None
    lead = tuple(canonical.shape[:-2])
    chain = Chain()
    kind, scores = chain.walk(operand_ref(weights, source, canonical))
    if output is None and over_learned_rows(scores):  # a classifier's or a sampler's softmax (logits.py)
        raise NotAttentionError(weights.name)
    query = key = energy = None
    value_name: str | None = None
    vector: Node | None = None
    bias: Node | None = None
    if kind == "product":
        assert scores.node is not None
        query, key = rows_and_cols(scores.node, scores.index)
    elif kind == "reduce":
        assert scores.node is not None
        reduced = reduce_energy(scores.node, scores)
        if reduced is None:
            kind = "given"
        else:
            energy, vector, bias = reduced
    lay = layout(lead, query)
    batch, heads = lay.batch, lay.heads
    if batch * heads > MAX_SLICES:
        kept = max(1, MAX_SLICES // heads)
        found.warnings.append(Msg("{scope} ran on {batch} batch items at once; the first {kept} are shown",
                                  scope=found.scope.name, batch=batch, kept=kept))
        batch = kept
    keep = batch * heads
    found.batch, found.heads = batch, heads
    operands = Operands(found)
    refs = {"query": query, "key": key, "values": values}
    flats = {k: None if r is None else lay.flat_ref(r, keep) for k, r in refs.items()}
    last: str
    if kind == "product":
        q, k = flats["query"], flats["key"]
        assert q is not None and k is not None
        fused = operands.fused([r for r in (q, k, flats["values"]) if r is not None])
        q_proj, k_proj = projection(unscaled(q)[0]), projection(unscaled(k)[0])
        one_sided = (q_proj is None) != (k_proj is None)
        q_name = operands.operand(q, "query_proj" if one_sided and q_proj else "query", "query", fused,
                                  "query" if one_sided else "input")
        k_name = operands.operand(k, "key_proj" if one_sided and k_proj else "key", "key", fused,
                                  "key" if one_sided else "key_input")
        value_name = _value(found, operands, flats["values"], (k, k_name))
        folded = q_name.endswith("_scaled") or k_name.endswith("_scaled")
        name = "scaled" if folded else "scores"
        last = found.add(Role(name, lay.flat(scores.values, keep), DotOp(q_name, k_name),
                              scores.origin, Msg("S = {q}·{k}ᵀ: every query against every key", q=q_name,
                                                 k=k_name), ("query", "key")))
        found.kind = "general" if one_sided else "scaled_dot" if folded else "dot"
    elif kind == "reduce":
        assert energy is not None and vector is not None
        e_name, _ = energy_roles(found, operands, lay.flat_ref(energy, keep))
        value_name = _value(found, operands, flats["values"], None)
        v_name = param_name(found, vector, "v")
        b_name = param_name(found, bias, "b_v")
        assert v_name is not None
        last = found.add(Role("scores", lay.flat(scores.values, keep), ReduceOp(e_name, v_name, b_name),
                              scores.origin, Msg("e = {v}ᵀ E: a learned vector scores each energy", v=v_name),
                              ("query", "key")))
    else:
        op = scores.node.name if scores.node is not None else "?"
        last = found.add(Role("scores", lay.flat(scores.values, keep), GivenOp(Msg("made by {op}", op=op)),
                              scores.origin, Msg("S: the scores, as the code made them"), ("query", "key")))
    for step, ref, detail in reversed(chain.steps):
        data = lay.flat(ref.values, keep)
        if step == "scaled" and isinstance(detail, torch.Tensor):  # a number of its own for each slice: τ_h
            factors = tuple(float(f) for f in lay.flat(detail, keep).reshape(-1))
            last = found.add(Role(found.fresh("scaled"), data,
                                  ScaleOp(last, factors, Msg("the code scales the scores of each head by a number "
                                                             "of its own")),
                                  ref.origin, Msg("S' = {source} · {factor}", source=last, factor="τ"),
                                  ("query", "key")))
        elif step == "scaled":
            assert isinstance(detail, float)
            if found.kind == "dot":
                found.kind = "scaled_dot"
            last = found.add(Role(found.fresh("scaled"), data, ScaleOp(last, detail, describe_factor(detail)),
                                  ref.origin, Msg("S' = {source} · {factor}", source=last, factor=f"{detail:.4g}"),
                                  ("query", "key")))
        elif step == "capped":
            assert isinstance(detail, float)
            last = found.add(Role(found.fresh("capped"), data, SoftCapOp(last, detail), ref.origin,
                                  Msg("S_cap = {cap}·tanh({source} / {cap})", source=last, cap=f"{detail:.4g}"),
                                  ("query", "key")))
        elif step == "masked":
            assert isinstance(detail, tuple)
            hidden_ok, fill, held, rule, test = detail
            allowed = lay.flat(hidden_ok, keep)
            formula = Msg("M = {source} where the mask allows, {fill} where it does not   ({convention})",
                          source=last, fill=f"{fill:g}", convention=code_rule_name(rule))  # as the code reads it
            last = found.add(Role(found.fresh("masked"), data, MaskOp(last, allowed, fill, lay.flat(held, keep), rule,
                                                                      test),
                                  ref.origin, formula, ("query", "key")))
        elif step == "shifted":
            last = found.add(Role(found.fresh("shifted"), data, GivenOp(Msg("the scores minus their row's largest "
                                                                            "score: softmax is the same, exp cannot "
                                                                            "overflow")), ref.origin,
                                  Msg("{source} − max of its row", source=last), ("query", "key")))
        elif step == "biased":
            assert isinstance(detail, Ref)
            bias_name = found.add(Role(found.fresh("bias"), lay.flat(detail.values, keep),
                                       GivenOp(Msg("added to the scores by the code")), ref.origin,
                                       Msg("B: what the code adds to the scores"), ("query", "key")))
            last = found.add(Role(found.fresh("biased"), data, SumOp((last, bias_name)), ref.origin,
                                  Msg("{source} + {bias}", source=last, bias=bias_name), ("query", "key")))
    found.add(Role("weights", lay.flat(Ref(weights, weights.value, canonical).values, keep), SoftmaxOp(last),
                   weights.origin, Msg("A = softmax({source}) over keys: each row sums to 1", source=last),
                   ("query", "key")))
    if product is None or values is None or out_index is None:
        return
    dropped_flat = None if dropped is None else lay.flat_ref(dropped, keep)
    _output(found, operands, product, value_name or _value(found, operands, flats["values"], None),
            lay.flat(out_index, keep), dropped_flat)


def _value(found: Found, operands: Operands, values: Ref | None, key: tuple[Ref, str] | None) -> str | None:
    """The role of the values: an input already shown (Bahdanau's keys), the key itself, or a role of its own."""
    if values is None:
        return None
    known = next((name for ref, name in operands.inputs if ref.same(values)), None)
    if known is None and key is not None and key[0].same(values):
        known = key[1]
    return known or operands.operand(values, "value", "key", {}, "value_input")


def _output(found: Found, operands: Operands, product: Node, values: str | None, out_index: torch.Tensor,
            dropped: Ref | None) -> None:
    assert values is not None
    weights = "weights"
    if dropped is not None:
        data = dropped.values
        changed = not torch.equal(data, found.role(weights).data.to(data.dtype))  # a cast to the model's dtype is not
        op = dropped.node.name if dropped.node is not None else "?"
        if changed and op == "dropout":
            weights = found.add(Role("dropped", data, GivenOp(Msg("the weights after dropout (training mode)")),
                                     dropped.origin, Msg("A after dropout: the module was in training mode"),
                                     ("query", "key")))
            found.warnings.append(Msg("dropout changed the weights before the product with the values: the module "
                                      "was in training mode"))
        elif changed:
            weights = found.add(Role("reweighted", data, GivenOp(Msg("the weights as the code changed them after "
                                                                     "the softmax (by {op})", op=op)),
                                     dropped.origin, Msg("A': the weights the values are summed with"),
                                     ("query", "key")))
    output = Ref(product, product.value, out_index)
    found.output = output
    found.add(Role("output", output.values, WeightedSumOp(weights, values), product.origin,
                   Msg("O = A·{values}: each row is a weighted sum of value rows", values=values), ("query", "dim")))
    after_output(found, output, "output")


def softmax_alone(weights: Node, found: Found) -> None:
    """The softmax and what it read, as the code made them: for a call the recogniser could not lay out.

    Its leading dimensions are steps; a softmax over one dimension is one query's row.
    """
    source = softmax_input(weights)
    if source is None or weights.value.dim() == 0 or source.value.shape != weights.value.shape:
        raise UnrecognisedError("the softmax reads no recorded tensor of its shape")
    canonical = torch.arange(weights.value.numel()).reshape(weights.value.shape).movedim(softmax_dim(weights), -1)
    canonical = canonical.reshape(-1, *canonical.shape[-2:]) if canonical.dim() > 1 else canonical[None, None, :]
    batch = min(canonical.shape[0], MAX_SLICES)
    if batch < canonical.shape[0]:
        found.warnings.append(Msg("{scope} ran on {batch} batch items at once; the first {kept} are shown",
                                  scope=found.scope.name, batch=canonical.shape[0], kept=batch))
    canonical = canonical[:batch]
    found.batch, found.heads = batch, 1
    scores = source.value.reshape(-1)[canonical]
    found.add(Role("scores", scores, GivenOp(Msg("made by {op}", op=source.name)), source.origin,
                   Msg("S: the scores, as the code made them"), ("query", "key")))
    found.add(Role("weights", weights.value.reshape(-1)[canonical], SoftmaxOp("scores"), weights.origin,
                   Msg("A = softmax({source}) over keys: each row sums to 1", source="scores"), ("query", "key")))
