"""What a recording keeps of the code's history: the graph behind each attention call, cut at its projections' inputs.

Every recorded node holds its inputs, so without a cut a deep model's last attention call would hold
the whole forward before it: each earlier layer's MLP, norms and residual sums (for a 12-layer Llama at 128
tokens, some 50 MB, most of it values no stage reads, against some 8 MB with the cut). The recogniser reads
an attention call back to the linear projections that made its queries, keys and values, and from there only
the values of the tensor they read (`operands.projection`): how that input was made is never asked. So once a call
is recorded, the input of each projection behind it becomes a leaf that keeps its values, its line and
its scope, and what made it is dropped with the last reference to it.

An input the call also reads some other way (queries taken straight from the tensor the keys are
projected from) is kept whole, since the recogniser may walk back through it.

A fused call (SDPA, flex_attention, nn.MultiheadAttention) names its query, key and value, and each is
read only as far as [a scale by a number] [views] [a projection, and its input's values]
(`operands.call_operands`): the first tensor past that becomes the leaf. A model's rotary embedding is
such a tensor: the rotated queries and keys are kept, the products and halves that made them are not.
"""

from __future__ import annotations

from attn_tui.sources.recorder.calls import ANCHORS
from attn_tui.sources.recorder.hooks.hook import Recorder, RecorderHook
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node, walk

MAX_VISITS = 512  # nodes walked back from one call: the walk stops at projections, so a layer needs far fewer
FUSED = ANCHORS - {"softmax"}  # the calls that name their query, key and value
OPERANDS = ("query", "key", "value")


def _base(node: Node) -> Node | None:
    """The node a view reads its numbers from (through every view), or None where a view's source is unknown."""
    while node.is_view:
        if not node.inputs or not isinstance(node.inputs[0], Node):
            return None
        node = node.inputs[0]
    return node


def _number(value: object) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or \
        (isinstance(value, Node) and value.value.numel() == 1)


def _unscaled(node: Node) -> Node:
    """`x` of `x * c`, `c * x` or `x / c` with c a number (`operands.scale_of`, told from shapes alone), else node."""
    if node.name not in ("mul", "div") or len(node.inputs) < 2:
        return node
    a, b = node.inputs[0], node.inputs[1]
    pairs = ((a, b),) if node.name == "div" else ((a, b), (b, a))
    for x, c in pairs:
        if isinstance(x, Node) and _number(c) and x.value.numel() > 1:
            return x
    return node


def _may_be_pieces(node: Node) -> bool:
    """A `cat` / `stack` that may join views of one node again (`refs.joined` follows those back: the heads of one
    output put side by side); one of different tensors (a cache's past and new keys) is read as it is."""
    parts = node.inputs[0] if node.inputs and isinstance(node.inputs[0], tuple) else ()
    bases = [_base(part) if isinstance(part, Node) else None for part in parts]
    if any(base is None or base.name in ("cat", "stack") for base in bases):
        return bool(parts)
    return len({id(base) for base in bases}) == 1


def _leaf(node: Node, any_cat_read: bool = False) -> None:
    """What made `node` is let go; its values, line and scope stay. Left whole: the output of an earlier call
    (`after`: its recognition reads it as it was made), a projection, a parameter, and a `cat` / `stack`
    the recogniser reads back through: behind a projection any (`any_cat_read`: concat attention's W·[s; h]),
    behind a fused call's operand only one that may join pieces of one node."""
    if node.after is not None or node.name in ("leaf", "linear") or node.is_param:
        return
    if node.name in ("cat", "stack") and (any_cat_read or _may_be_pieces(node)):
        return
    node.name, node.kind, node.inputs, node.kwargs = "leaf", Kind.LEAF, (), {}


def _cut_operands(call: Node) -> None:
    operands = [a for a in call.inputs[:3] if isinstance(a, Node)]
    operands += [call.kwargs[name] for name in OPERANDS if isinstance(call.kwargs.get(name), Node)]
    for operand in operands:
        base = _base(operand)
        unscaled = _base(_unscaled(base)) if base is not None else None
        if unscaled is None:
            continue
        projected = _projected_from(unscaled)
        _leaf(projected if projected is not None else unscaled)


def _projected_from(node: Node) -> Node | None:
    """The base of the tensor a linear with a learned weight reads, or None for any other node. A linear to one
    number is not a projection but additive attention's scoring vector, whose input (the energy) the recogniser
    reads back through (`energy.reduce_energy`)."""
    if node.name != "linear" or len(node.inputs) < 2 or node.value.shape[-1:] == (1,):
        return None
    x, weight = node.inputs[0], node.inputs[1]
    if not isinstance(x, Node) or not isinstance(weight, Node) or not weight.is_param:
        return None
    return _base(x)


def cut_behind(anchor: Node) -> None:
    """Make the inputs of the projections behind `anchor` leaves, so what made them can be freed."""
    if anchor.name in FUSED:
        _cut_operands(anchor)
        return
    cuts: dict[int, Node] = {}

    def inputs(node: Node) -> list[Node]:
        """A node's inputs, but a projection's input is noted as a cut instead of walked through."""
        x = _projected_from(node)
        if x is None:
            return node.tensors()
        cuts[id(x)] = x
        return [n for n in node.tensors() if n is not node.inputs[0]]  # the weight, a bias

    reached = {id(node) for node in walk([anchor], inputs, MAX_VISITS)}  # read other than through a projection
    for key, x in cuts.items():
        if key not in reached:
            _leaf(x, any_cat_read=True)


class Pruning(RecorderHook):
    """Each kept call's graph is cut behind its projections as it is kept (before its bytes are counted)."""

    def anchored(self, recorder: Recorder, call: Node) -> None:
        cut_behind(call)


PRUNING = Pruning()
