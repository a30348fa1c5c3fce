"""From one recorded softmax to named stages: what it reads and over which dimension, and forward to the output.

Backwards from the softmax's input the steps to the scores are `chain.py`'s one walk.
Forwards from the weights, through what the code changed after the softmax (a dropout, a
cast, a mask or a renormalisation: the kinds kinds.py calls pass-throughs and changes after
a softmax): the product with the values, then the heads side by side and a projection.
Whatever is not recognised stays, under its own name, as given; what is recognised gets the
core op the inspector can recompute.
"""

from __future__ import annotations

import math
import re

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.calls import written_parts
from attn_tui.sources.recorder.contract import UnrecognisedError, bilinear, transposed
from attn_tui.sources.recorder.found import (
    DotOp,
    Found,
    MaskOp,
    ReduceOp,
    ScaleOp,
    SoftmaxOp,
    SumOp,
    WeightedSumOp,
)
from attn_tui.sources.recorder.kinds import WEIGHTS_KEPT, After, Kind
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import after_output, projection, unscaled
from attn_tui.sources.recorder.refs import Ref, UnfollowableError, base_of, operand_ref


def softmax_input(node: Node) -> Node | None:
    """What a softmax reads (for one written out, `exp(x) / sum(exp(x))` and the like, the x)."""
    if node.kind is Kind.SOFTMAX:
        source = node.inputs[0] if node.inputs else None
        return source if isinstance(source, Node) else None
    parts = written_parts(node)
    return None if parts is None else parts[0]


def softmax_dim(node: Node) -> int:
    parts = written_parts(node)
    if parts is not None:  # written out: the dimension of its sum (or log_softmax, logsumexp)
        node = parts[1]
    dim = node.inputs[1] if len(node.inputs) > 1 else node.kwargs.get("dim")
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    ndim = node.value.dim()
    if not isinstance(dim, int):  # softmax's legacy implicit dim
        dim = 0 if ndim in (0, 1, 3) else 1
    return dim % max(ndim, 1)


# ----- the output side -------------------------------------------------------------------------
def find_output(weights: Node) -> tuple[Node, Ref, Ref, torch.Tensor, Ref | None] | None:
    """The product of the weights with the values: (node, weights ref (*b, L, S) into the softmax's numbers,
    values ref (*b, S, dv), output positions (*b, L, dv), the weights after a dropout or cast between them).

    The product may be `weights @ values`, `values.T @ weights`, or `(weights * values).sum(dim)`
    (then the values must keep a dimension of their own: a sum against a mask is no output).
    """
    queue, seen = [weights], set()
    while queue:
        node = queue.pop(0)
        for consumer in node.consumers:
            if id(consumer) in seen:
                continue
            seen.add(id(consumer))
            if consumer.is_view or consumer.kind in WEIGHTS_KEPT:
                queue.append(consumer)
                continue
            try:
                found = bilinear(consumer)
            except UnfollowableError:
                continue
            if found is None:
                continue
            for left, right, out_index in (found, transposed(found)):
                if consumer.kind is Kind.SUM and right.index.shape[-1] == 1:
                    continue
                on_left = _weights_side(left, weights)
                if on_left is not None:
                    return consumer, on_left[0], right, out_index, on_left[1]
    return None


def _weights_side(left: Ref, weights: Node) -> tuple[Ref, Ref | None] | None:
    """`left` as a ref into the softmax's numbers, and the ref it had before when something came between:
    a dropout or a cast, or a change after the softmax (`masked_fill(pad, 0)`, `nan_to_num`, a renormalisation)."""
    if left.node is weights:
        return left, None
    ref = left
    for _ in range(8):
        node = ref.node
        if node is None or node.kind not in WEIGHTS_KEPT:
            return None
        main = _main_input(node)
        if main is None:
            return None
        try:
            ref = operand_ref(node, main, ref.index)
        except UnfollowableError:
            return None
        if ref.node is weights:
            return ref, left
    return None


def _main_input(node: Node) -> Node | None:
    """The input an elementwise change after the softmax changes: of the node's shape, not a mask, on the way back."""
    candidates = [a for a in node.inputs[:3] if isinstance(a, Node) and a.value.shape == node.value.shape
                  and a.value.dtype != torch.bool]
    for candidate in candidates:
        try:
            made = base_of(candidate)
        except UnfollowableError:
            continue
        if made.after is not None and (made.after is After.ANCHOR or made.kind in WEIGHTS_KEPT):
            return candidate
    return None


def describe_factor(factor: float) -> Msg:
    d = round(factor ** -2) if factor > 0 else 0
    if d and math.isclose(factor, d ** -0.5, rel_tol=1e-6):
        return Msg("the code divides by √{d} = {root}", d=d, root=f"{math.sqrt(d):.4g}")
    return Msg("the code multiplies by {factor}", factor=f"{factor:.4g}")


def fresh_name(found: Found, name: str) -> str:
    return found.fresh(re.sub(r"[^A-Za-z0-9_]", "_", name) or "step")


__all__ = ["DotOp", "MaskOp", "ReduceOp", "ScaleOp", "SoftmaxOp", "SumOp", "UnrecognisedError",
           "WeightedSumOp", "after_output", "bilinear", "find_output", "projection", "softmax_dim", "unscaled"]
