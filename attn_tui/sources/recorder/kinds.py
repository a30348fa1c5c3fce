"""What each torch call the recorder keeps does, said once: the few kinds of operation that attention is made of.

The code spells one step many ways (`q @ k.T`, `torch.bmm`, `einsum`; `x / c`, `x * c`; `.view`,
`.permute`, `[…]`). Each recorded call gets its kind from this one table when it is captured,
so the recognisers ask a node's kind ("a product? a view? a mask?") and read its plain name only
where they need a finer distinction (`mul` or `div`) or a formula. A name not in the table is not
recorded at all.
"""

from __future__ import annotations

from enum import Enum


class Kind(Enum):
    """What a recorded call does, as far as recognising attention cares."""

    CONTRACT = "contract"  # a product summed over what its operands share: QKᵀ, weights · V
    FUSED = "fused"  # a product, its scale and an added tensor in one call (baddbmm)
    LINEAR = "linear"  # a projection by a weight and a bias
    SCALE = "scale"  # cell by cell times or over: by a number, a 0/1 gate, a factor per head
    ADD = "add"  # cell by cell plus or minus: a mask of large negatives, a bias, softmax's shift
    MASK = "mask"  # cells replaced by a fill where a mask says so
    WRITE = "write"  # cells written through an index, `scores[mask] = fill`
    FINITE = "finite"  # every cell made finite (a row of -inf's NaN weights made zeros)
    SOFTMAX = "softmax"
    SUM = "sum"  # a sum along dimensions (of a product: a contraction written out)
    MAX = "max"  # a maximum along a dimension (softmax's stability shift)
    TANH = "tanh"  # an energy, a soft cap
    CAT = "cat"  # tensors joined along a dimension (heads side by side, [q; k])
    VIEW = "view"  # the same numbers in another shape: read back by replaying it on an index tensor
    COPY = "copy"  # the same numbers copied as they lie: a view to replay, a pass-through for the weights
    PASS = "pass"  # each number where it was, cast or dropped out
    COMPARE = "compare"  # a test of each cell against a number (`mask == 0`)
    ATTENTION = "attention"  # a whole attention in one call (SDPA, nn.MultiheadAttention, flex_attention)
    LEAF = "leaf"  # a tensor the recorder did not see made
    OTHER = "other"  # kept for a pass that reads it by name (a written-out softmax, a sampler's sort)


CASTS = frozenset({"to", "float", "double", "half", "bfloat16", "type_as", "type"})  # recorded as one "cast"

NAMES: dict[Kind, tuple[str, ...]] = {
    Kind.CONTRACT: ("matmul", "rmatmul", "mm", "bmm", "einsum"),
    Kind.FUSED: ("baddbmm", "addmm"),
    Kind.LINEAR: ("linear",),
    Kind.SCALE: ("mul", "div", "true_divide"),
    Kind.ADD: ("add", "sub", "rsub"),
    Kind.MASK: ("masked_fill", "where"),
    Kind.WRITE: ("setitem",),
    Kind.FINITE: ("nan_to_num",),
    Kind.SOFTMAX: ("softmax", "log_softmax"),
    Kind.SUM: ("sum",),
    Kind.MAX: ("max", "amax"),
    Kind.TANH: ("tanh",),
    Kind.CAT: ("cat", "concat", "stack"),
    Kind.VIEW: ("view", "reshape", "permute", "transpose", "t", "T", "mT", "squeeze", "unsqueeze", "getitem",
                "select", "narrow", "expand", "expand_as", "repeat", "flatten", "unflatten", "movedim", "moveaxis",
                "swapaxes", "swapdims", "view_as", "reshape_as", "chunk", "split", "unbind", "tensor_split", "detach",
                "data", "squeeze_", "unsqueeze_", "transpose_", "t_", "repeat_interleave"),
    Kind.COPY: ("contiguous", "clone"),
    Kind.PASS: ("cast", "dropout", *sorted(CASTS)),
    Kind.COMPARE: ("eq", "ne", "lt", "le", "gt", "ge"),
    Kind.ATTENTION: ("scaled_dot_product_attention", "multi_head_attention_forward", "flex_attention"),
    Kind.LEAF: ("leaf",),
    Kind.OTHER: ("exp", "logsumexp", "neg",
                 "scatter", "sort", "pad"),  # a sampler's penalised or sorted logits: its softmax is no attention
}
KINDS: dict[str, Kind] = {name: kind for kind, names in NAMES.items() for name in names}  # the names recorded

VIEWS = frozenset({Kind.VIEW, Kind.COPY})  # read back by replaying the call on an index tensor
PASSES = frozenset({Kind.PASS, Kind.COPY})  # each number where it was
CHANGED_AFTER_SOFTMAX = frozenset({Kind.SCALE, Kind.MASK, Kind.FINITE})  # the weights changed cell by cell
WEIGHTS_KEPT = PASSES | CHANGED_AFTER_SOFTMAX  # what may come between the softmax and the product with the values


class After(Enum):
    """Where a node sits on the way from an attention onwards, as the recognisers read that way."""

    ANCHOR = 0  # the softmax (or a whole attention call) itself
    WEIGHTS = 1  # the weights, seen through views and changes cell by cell
    OUTPUT = 2  # their product with the values, and that output through views, casts and a concat


_FROM_WEIGHTS = {kind: After.WEIGHTS for kind in VIEWS | WEIGHTS_KEPT} | {
    kind: After.OUTPUT for kind in (Kind.CONTRACT, Kind.SUM, Kind.FUSED, Kind.CAT)}
# The forward pattern, one step per call: from a side, the kinds that continue it and the side they reach. A
# projection (LINEAR) is linked but ends the way (what it feeds is never read); any other call is linked only.
FORWARD: dict[After, dict[Kind, After]] = {
    After.ANCHOR: _FROM_WEIGHTS,
    After.WEIGHTS: _FROM_WEIGHTS,
    After.OUTPUT: {kind: After.OUTPUT for kind in VIEWS | PASSES | {Kind.CAT}},
}
