"""The steps between the scores and a softmax, found by one walk back over one table of what each kind of call may be.

From the softmax's input back: views and pass-throughs are seen through; a mask (`masked_fill`,
`where`, `scores[mask] = …`, an added mask of large negatives or a 0/1 gate), a bias, softmax's
own shift, a scale (by a number, by one per head, a soft cap's `cap · tanh(x / cap)`) each
become a step with its numbers per slice; the walk ends at what made the scores: a product of
queries and keys (`contract.py`), a reduction (a linear to one number, a sum: an energy read by a
learned vector, `energy.py`), or anything else, given. `baddbmm` is taken apart (`fused.py`) and walked on.
Which steps a call may be is one table, `BACK_STEPS`, by the call's kind (kinds.py), tried in order.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from attn_tui.sources.recorder.contract import is_product
from attn_tui.sources.recorder.energy import learned_vector
from attn_tui.sources.recorder.fused import unfused
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import scale_of
from attn_tui.sources.recorder.refs import Ref, operand_ref, plain, resolve

MASK_AT = -1e4  # an added value at or below this is a mask, not a bias
MAX_STEPS = 64  # calls walked back from a softmax before what is left is taken as given

BackStep = Callable[["Chain", Node, Ref], "Ref | str | None"]  # a ref to walk on, what made the scores, or not this


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
        """Walk back from the softmax's input; return what made the scores ("product", "reduce" or "given")
        and the scores' ref. At each call the back-steps of its kind are tried in order; the first that
        applies moves the walk on or ends it, and a call none applies to is where the given scores are."""
        for _ in range(MAX_STEPS):
            node = ref.node
            if node is None:
                return "given", ref
            moved = self.step_back(node, ref)
            if moved is None:
                return "given", ref
            if isinstance(moved, str):
                return moved, ref
            ref = moved
        return "given", ref

    def step_back(self, node: Node, ref: Ref) -> Ref | str | None:
        for step in BACK_STEPS.get(node.kind, ()):
            moved = step(self, node, ref)
            if moved is not None:
                return moved
        return None

    # ----- the back-steps, each for the kinds BACK_STEPS gives it -----------------------------------
    def through_view(self, node: Node, ref: Ref) -> Ref:
        return _view_back(node, ref)

    def through_pass(self, node: Node, ref: Ref) -> Ref:
        return operand_ref(node, node.inputs[0], ref.index)

    def shifted(self, node: Node, ref: Ref) -> Ref | None:
        """`x − max(x)`: softmax's stability shift."""
        shift = node.inputs[1] if node.name == "sub" and len(node.inputs) >= 2 else None
        if not isinstance(shift, Node) or shift.kind is not Kind.MAX:
            return None
        self.steps.append(("shifted", ref, None))
        return operand_ref(node, node.inputs[0], ref.index)

    def soft_capped(self, node: Node, ref: Ref) -> Ref | None:
        """`cap · tanh(x / cap)`: Gemma 2's logit soft cap."""
        capped = _soft_cap(node)
        if capped is None:
            return None
        inside, cap = capped
        self.steps.append(("capped", ref, cap))
        return _back_through(node, inside, ref.index)

    def scaled(self, node: Node, ref: Ref) -> Ref | None:
        found = scale_of(node)
        if found is None:
            return None
        self.steps.append(("scaled", ref, found[1]))
        return operand_ref(node, found[0], ref.index)

    def gated(self, node: Node, ref: Ref) -> Ref | None:
        """`scores * mask + (1 - mask) * -1e9`: the code's 0/1 gate and the masking after it, one masking."""
        gated = _gate(node, ref.index)
        if gated is None or not self.steps or self.steps[-1][0] != "masked" \
                or not torch.equal(self.steps[-1][2][0], gated[1]):  # type: ignore[index]
            return None
        kind, at, detail = self.steps[-1]
        assert isinstance(detail, tuple)
        self.steps[-1] = (kind, at, (*detail[:2], gated[1].float(), "gate", ""))
        return operand_ref(node, gated[0], ref.index)

    def scaled_per_slice(self, node: Node, ref: Ref) -> Ref | None:
        per_slice = _per_slice_scale(node, ref.index)
        if per_slice is None:
            return None
        self.steps.append(("scaled", ref, per_slice[1]))
        return operand_ref(node, per_slice[0], ref.index)

    def product(self, node: Node, ref: Ref) -> str | None:
        return "product" if is_product(node) else None

    def by_learned_vector(self, node: Node, ref: Ref) -> str | None:
        """`sum(v * energy, -1)` with v a parameter: an energy's scores, not a product of queries and keys."""
        return "reduce" if learned_vector(node) else None

    def reduced(self, node: Node, ref: Ref) -> str:
        return "reduce"

    def unfolded(self, node: Node, ref: Ref) -> Ref | None:
        """baddbmm: a product, a scale and a sum in one call, taken apart and walked on."""
        parts = unfused(node)
        return None if parts is None else Ref(parts, parts.value, ref.index)

    def masking(self, node: Node, ref: Ref) -> Ref | None:
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

    def added(self, node: Node, ref: Ref) -> Ref | None:
        """`scores + mask` (a mask of 0 and large negatives) or `scores + bias`; `scores - shift` is left as given."""
        a, b = node.inputs[0] if node.inputs else None, node.inputs[1] if len(node.inputs) >= 2 else None
        if node.name != "add" or not isinstance(a, Node) or not isinstance(b, Node):
            return None
        pos = ref.index
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


BACK_STEPS: dict[Kind, tuple[BackStep, ...]] = {  # what each kind of call may be, tried in this order
    Kind.VIEW: (Chain.through_view,),
    Kind.COPY: (Chain.through_view,),
    Kind.PASS: (Chain.through_pass,),
    Kind.MASK: (Chain.masking,),
    Kind.WRITE: (Chain.masking,),
    Kind.ADD: (Chain.shifted, Chain.added),
    Kind.SCALE: (Chain.soft_capped, Chain.scaled, Chain.gated, Chain.scaled_per_slice),
    Kind.LINEAR: (Chain.reduced,),
    Kind.SUM: (Chain.by_learned_vector, Chain.product, Chain.reduced),
    Kind.CONTRACT: (Chain.product,),
    Kind.FUSED: (Chain.unfolded,),
}


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

