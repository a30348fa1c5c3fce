"""What a recording keeps of the code's history: the graph behind each attention call, cut at its projections' inputs.

Every recorded node holds its inputs, so without a cut a deep model's last attention call would hold
the whole forward before it: each earlier layer's MLP, norms and residual sums (a 12-layer Llama at 128
tokens kept some 50 MB, half of it values no stage reads). The recogniser reads an attention call back
to the linear projections that made its queries, keys and values, and from there only the values of the
tensor they read (`operands.projection`): how that input was made is never asked. So once a call
is recorded, the input of each projection behind it becomes a leaf that keeps its values, its line and
its scope, and what made it is dropped with the last reference to it.

An input the call also reads some other way (queries taken straight from the tensor the keys are
projected from) is kept whole, since the recogniser may walk back through it.
"""

from __future__ import annotations

from attn_tui.sources.recorder.node import Node

MAX_VISITS = 512  # nodes walked back from one call: the walk stops at projections, so a layer needs far fewer


def _projected_from(node: Node) -> Node | None:
    """The base of the tensor a linear with a learned weight reads, or None for any other node. A linear to one
    number is not a projection but additive attention's scoring vector, whose input (the energy) the recogniser
    reads back through (`energy.reduce_energy`)."""
    if node.name != "linear" or len(node.inputs) < 2 or node.value.shape[-1:] == (1,):
        return None
    x, weight = node.inputs[0], node.inputs[1]
    if not isinstance(x, Node) or not isinstance(weight, Node) or not weight.is_param:
        return None
    while x.is_view and x.inputs and isinstance(x.inputs[0], Node):
        x = x.inputs[0]
    return None if x.is_view else x


def cut_behind(anchor: Node) -> None:
    """Make the inputs of the projections behind `anchor` leaves, so what made them can be freed."""
    seen: set[int] = set()
    reached: set[int] = set()  # nodes the call reads other than through a projection
    cuts: dict[int, Node] = {}
    stack = [anchor]
    while stack and len(seen) < MAX_VISITS:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        reached.add(id(node))
        x = _projected_from(node)
        if x is not None:
            cuts[id(x)] = x
            stack.extend(n for n in node.tensors() if n is not node.inputs[0])  # the weight, a bias
            continue
        stack.extend(node.tensors())
    for key, x in cuts.items():
        if key in reached or x.hops is not None or x.name in ("leaf", "linear", "cat", "stack") or x.is_param:
            continue  # `hops`: the output of an earlier call, which that call's recognition reads as it was made
        x.name, x.inputs, x.kwargs = "leaf", (), {}
