"""From one recorded softmax to named stages: walk back to the scores, forward to the output.

Backwards from the softmax's input: masks (`masked_fill`, `where`, `scores[mask] = …`, an
added mask), scaling by a number (or by one per head), then what made the scores: a
product of queries and keys in any spelling (`contract.py`; `baddbmm` taken apart by
`fused.py`), or a learned vector on an energy (`Va(tanh(…))`, `sum(v * energy)`; `energy.py`).
Forwards from the weights, through what the code changed after the softmax: the product
with the values, then the heads side by side and a projection. Whatever is not
recognised stays, under its own name, as given; what is recognised gets the core op the
inspector can recompute.
"""

from __future__ import annotations

import math
import re

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.calls import written_parts
from attn_tui.sources.recorder.contract import UnrecognisedError, bilinear, is_product, transposed
from attn_tui.sources.recorder.energy import learned_vector
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
from attn_tui.sources.recorder.fused import unfused
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import after_output, projection, scale_of, unscaled
from attn_tui.sources.recorder.refs import Ref, UnfollowableError, base_of, operand_ref, plain, resolve

PASS = ("cast", "dropout", "contiguous", "clone")
AFTER_SOFTMAX = ("mul", "div", "masked_fill", "where", "nan_to_num")  # the weights changed cell by cell
MASK_AT = -1e4  # an added value at or below this is a mask, not a bias


def softmax_input(node: Node) -> Node | None:
    """What a softmax reads (for one written out, `exp(x) / sum(exp(x))` and the like, the x)."""
    if node.name in ("softmax", "log_softmax"):
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
            if consumer.is_view or consumer.name in PASS or consumer.name in AFTER_SOFTMAX:
                queue.append(consumer)
                continue
            try:
                found = bilinear(consumer)
            except UnfollowableError:
                continue
            if found is None:
                continue
            for left, right, out_index in (found, transposed(found)):
                if consumer.name == "sum" and right.index.shape[-1] == 1:
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
        if node is None or (node.name not in PASS and node.name not in AFTER_SOFTMAX):
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
        if made.hops is not None and (made.hops == 0 or made.name in PASS or made.name in AFTER_SOFTMAX):
            return candidate
    return None


# ----- the pre-softmax chain -------------------------------------------------------------------
def _mask_like(values: torch.Tensor) -> bool:
    return bool(((values == 0) | (values <= MASK_AT)).all()) and bool((values <= MASK_AT).any())


def _fill(value: object) -> float | None:
    """The one number a mask writes: a Python number, a tensor of one number, or `full_like(scores, -inf)`."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, Node) and value.value.numel() >= 1 and value.value.is_floating_point():
        first = value.value.reshape(-1)[0]
        if value.value.numel() == 1 or bool((value.value == first).all()):
            return float(first)
    return None


COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}


def _compared(node: Node, operand: Node, positions: torch.Tensor) -> tuple[torch.Tensor, str]:
    """The mask operand's numbers as the code's named mask holds them, and the test it made of them.

    `masked_fill(mask == 0, -inf)` reads a comparison: the inspector must say that `mask`
    holds 1 here and `mask == 0` is False, not that "the mask holds False". A mask that is
    no comparison of a tensor with a number is its own values, with no test.
    """
    symbol = COMPARISONS.get(operand.name)
    if symbol is not None and len(operand.inputs) == 2 and isinstance(operand.inputs[0], Node) \
            and isinstance(operand.inputs[1], (int, float, bool)):
        try:
            return _spread(node, operand.inputs[0], positions), f"{symbol} {operand.inputs[1]:g}"
        except RuntimeError:  # the compared tensor broadcasts otherwise than the comparison: say the comparison
            pass
    return _spread(node, operand, positions), ""


def _spread(node: Node, operand: Node, positions: torch.Tensor) -> torch.Tensor:
    """The numbers of `operand` broadcast to `node`'s shape, at `positions`."""
    spread = operand.value.expand(node.value.shape)
    if plain(positions) and positions.numel() == spread.numel():  # every position, in order: no gather
        return spread if positions.shape == spread.shape else spread.reshape(positions.shape)
    return spread.reshape(-1)[positions]


class Chain:
    """The steps between the scores and the softmax, walked backwards, each with its numbers per slice."""

    def __init__(self) -> None:
        self.steps: list[tuple[str, Ref, object]] = []  # (kind, the step's numbers, its details)

    def walk(self, ref: Ref) -> tuple[str, Ref]:
        """Walk back from the softmax's input; return what made the scores and the scores' ref."""
        for _ in range(64):
            node = ref.node
            if node is None:
                return "given", ref
            name, pos = node.name, ref.index
            tensors = node.inputs
            if node.is_view or name in PASS:
                ref = operand_ref(node, tensors[0], pos) if not node.is_view else _view_back(node, ref)
                continue
            if name in ("masked_fill", "setitem", "where"):
                masked = self._masking(node, ref)
                if masked is not None:
                    ref = masked
                    continue
                return "given", ref
            shift = tensors[1] if name == "sub" and len(tensors) >= 2 else None
            if isinstance(shift, Node) and shift.name in ("max", "amax"):
                self.steps.append(("shifted", ref, None))  # x − max(x): softmax's stability shift
                ref = operand_ref(node, tensors[0], pos)
                continue
            if name in ("add", "sub") and len(tensors) >= 2 and all(isinstance(t, Node) for t in tensors[:2]):
                step = self._added(node, ref)
                if step is not None:
                    ref = step
                    continue
                return "given", ref
            capped = _soft_cap(node)
            if capped is not None:  # cap · tanh(x / cap): Gemma 2's logit soft cap
                inside, cap = capped
                self.steps.append(("capped", ref, cap))
                ref = _back_through(node, inside, pos)
                continue
            scaled = scale_of(node)
            if scaled is not None:
                self.steps.append(("scaled", ref, scaled[1]))
                ref = operand_ref(node, scaled[0], pos)
                continue
            gated = _gate(node, pos)
            if gated is not None and self.steps and self.steps[-1][0] == "masked" \
                    and torch.equal(self.steps[-1][2][0], gated[1]):  # type: ignore[index]
                kind, at, detail = self.steps[-1]
                assert isinstance(detail, tuple)
                self.steps[-1] = (kind, at, (*detail[:2], gated[1].float(), "gate", ""))  # the code's 0/1 gate
                ref = operand_ref(node, gated[0], pos)  # `scores * mask + (1 - mask) * -1e9`: one masking
                continue
            per_slice = _per_slice_scale(node, pos)
            if per_slice is not None:
                self.steps.append(("scaled", ref, per_slice[1]))
                ref = operand_ref(node, per_slice[0], pos)
                continue
            if name == "linear" or (name == "sum" and learned_vector(node)):
                return "reduce", ref
            if is_product(node):
                return "product", ref
            if name == "sum":
                return "reduce", ref
            unfolded = unfused(node)
            if unfolded is not None:  # baddbmm: a product, a scale and a sum in one call, taken apart
                ref = Ref(unfolded, unfolded.value, pos)
                continue
            return "given", ref
        return "given", ref

    def _masking(self, node: Node, ref: Ref) -> Ref | None:
        """`masked_fill`, `scores[mask] = fill` or `where`: the blocked cells, the fill, and the code's own mask
        values with the rule that reads them (True = blocked for masked_fill, True = kept for where(mask, x, …))."""
        args = list(node.inputs) + [node.kwargs.get(k) for k in ("mask", "value") if k in node.kwargs]
        pos = ref.index
        test = ""
        if node.name == "masked_fill" and len(args) >= 3 and isinstance(args[1], Node):
            held, test = _compared(node, args[1], pos)
            fill, hidden, source, rule = _fill(args[2]), _spread(node, args[1], pos).bool(), args[0], "masked_fill"
        elif node.name == "setitem" and len(args) >= 3 and isinstance(args[1], Node) \
                and args[1].value.dtype == torch.bool:
            fill, source, rule = _fill(args[2]), args[0], "setitem"
            try:
                held = hidden = args[1].value.expand(node.value.shape).reshape(-1)[pos]
            except RuntimeError:
                return None
        elif node.name == "where" and len(args) >= 3 and isinstance(args[0], Node):
            held, test = _compared(node, args[0], pos)
            cond = _spread(node, args[0], pos).bool()
            if isinstance(args[1], Node) and _fill(args[2]) is not None:
                fill, hidden, source, rule = _fill(args[2]), ~cond, args[1], "where_keep"
            elif isinstance(args[2], Node) and _fill(args[1]) is not None:
                fill, hidden, source, rule = _fill(args[1]), cond, args[2], "where_fill"
            else:
                return None
        else:
            return None
        if fill is None or not isinstance(source, Node):
            return None
        self.steps.append(("masked", ref, (~hidden, fill, held, rule, test)))
        return operand_ref(node, source, pos)

    def _added(self, node: Node, ref: Ref) -> Ref | None:
        """`scores + mask` (a mask of 0 and large negatives) or `scores + bias`; `scores - shift` is left as given."""
        a, b = node.inputs[0], node.inputs[1]
        assert isinstance(a, Node) and isinstance(b, Node)
        pos = ref.index
        if node.name != "add":
            return None
        source, other = (a, b) if a.value.numel() >= b.value.numel() else (b, a)
        if a.value.numel() == b.value.numel() and _mask_like(_spread(node, a, pos)) \
                and not _mask_like(_spread(node, b, pos)):
            source, other = b, a  # `mask + scores`, the mask as large as the scores
        spread = _spread(node, other, pos)
        if _mask_like(spread):
            self.steps.append(("masked", ref, (spread == 0, float(spread.min()), spread, "additive", "")))
        else:
            self.steps.append(("biased", ref, operand_ref(node, other, pos)))
        return operand_ref(node, source, pos)


def _soft_cap(node: Node) -> tuple[list[Node], float] | None:
    """`cap * tanh(x / cap)` (or `tanh(x * (1 / cap)) * cap`): ([the product, tanh, the division], cap), walked
    back from the outer product; None for anything else."""
    outer = scale_of(node)
    if outer is None or outer[0].name != "tanh" or not outer[0].inputs or not isinstance(outer[0].inputs[0], Node):
        return None
    tanh, cap = outer[0], outer[1]
    inner = scale_of(tanh.inputs[0])
    if inner is None or cap == 0.0 or not math.isclose(inner[1] * cap, 1.0, rel_tol=1e-6):
        return None
    return [tanh, tanh.inputs[0], inner[0]], cap


def _back_through(node: Node, chain: list[Node], pos: torch.Tensor) -> Ref:
    """`pos` in `node`'s numbers followed back through `chain` (each an input of the one before) to its last."""
    ref = Ref(node, node.value, pos)
    for source in chain:
        assert ref.node is not None
        ref = operand_ref(ref.node, source, ref.index)
    return ref


def _gate(node: Node, pos: torch.Tensor) -> tuple[Node, torch.Tensor] | None:
    """`x * mask` with a mask of 0 and 1: (x, where the mask is 1, at `pos`)."""
    if node.name != "mul" or len(node.inputs) < 2:
        return None
    for x, gate in ((node.inputs[0], node.inputs[1]), (node.inputs[1], node.inputs[0])):
        if isinstance(x, Node) and isinstance(gate, Node) and x.value.shape == node.value.shape:
            spread = _spread(node, gate, pos)
            if bool(((spread == 0) | (spread == 1)).all()):
                return x, spread == 1
    return None


def _per_slice_scale(node: Node, pos: torch.Tensor) -> tuple[Node, torch.Tensor] | None:
    """`scores * tau` (or `/ tau`) with tau one number per head or batch item, a learned temperature:
    (the scores, the factors (*lead) at `pos` (*lead, L, S))."""
    if node.name not in ("mul", "div") or len(node.inputs) < 2:
        return None
    a, b = node.inputs[0], node.inputs[1]
    if not isinstance(a, Node) or not isinstance(b, Node) or not b.value.is_floating_point():
        return None
    pairs = [(a, b)] if node.name == "div" else [(a, b), (b, a)]
    for x, tau in pairs:
        if x.value.shape != node.value.shape or tau.value.numel() >= x.value.numel() or pos.dim() < 2:
            continue
        spread = _spread(node, tau, pos)  # (*lead, L, S)
        if not bool((spread == spread[..., :1, :1]).all()) or not bool((spread != 0).all()):
            continue
        factors = spread[..., 0, 0]
        return x, (1.0 / factors if node.name == "div" else factors)
    return None


def _view_back(node: Node, ref: Ref) -> Ref:
    """A ref into a view's numbers, as a ref into what the view reads."""
    inner = resolve(node)
    return Ref(inner.node, inner.base, inner.index.reshape(-1)[ref.index])


def describe_factor(factor: float) -> Msg:
    d = round(factor ** -2) if factor > 0 else 0
    if d and math.isclose(factor, d ** -0.5, rel_tol=1e-6):
        return Msg("the code divides by √{d} = {root}", d=d, root=f"{math.sqrt(d):.4g}")
    return Msg("the code multiplies by {factor}", factor=f"{factor:.4g}")


def fresh_name(found: Found, name: str) -> str:
    return found.fresh(re.sub(r"[^A-Za-z0-9_]", "_", name) or "step")


__all__ = ["Chain", "DotOp", "MaskOp", "ReduceOp", "ScaleOp", "SoftmaxOp", "SumOp", "UnrecognisedError",
           "WeightedSumOp", "after_output", "bilinear", "find_output", "projection", "softmax_dim", "unscaled"]
