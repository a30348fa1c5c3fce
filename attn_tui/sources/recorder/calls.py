"""Each torch call by one plain name (whose kind kinds.py says), and the softmax a user writes out by hand."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from attn_tui.sources.recorder.kinds import NAMES, Kind
from attn_tui.sources.recorder.node import Node

ANCHORS = {"softmax", *NAMES[Kind.ATTENTION]}  # the calls a recording keeps, each with the graph behind it
RENAMED = {"truediv": "div", "true_divide": "div", "concatenate": "cat", "concat": "cat", "rmul": "mul",
           "radd": "add", "iadd": "add_", "isub": "sub_", "imul": "mul_", "itruediv": "div_", "idiv": "div_",
           "swapdims": "transpose", "swapaxes": "transpose", "moveaxis": "movedim"}


def func_name(func: Callable[..., Any]) -> str:
    """`torch.matmul`, `Tensor.matmul`, `Tensor.__matmul__` and `Tensor.T` as one plain name each."""
    name = getattr(func, "__name__", "")
    if name == "__get__":  # a property: Tensor.T, Tensor.mT, Tensor.data
        name = getattr(getattr(func, "__self__", None), "__name__", "")
    if name.startswith("__") and name.endswith("__"):
        name = name[2:-2]
        if name in ("rdiv", "rtruediv"):
            return "rdiv"
    return RENAMED.get(name, name)


_NAMES: dict[Any, tuple[str, bool]] = {}  # torch function → (its plain name, whether its name says in place)


def name_of(func: Callable[..., Any]) -> tuple[str, bool]:
    """`func_name` and whether the name is an in-place one, worked out once per function: a forward makes
    hundreds of torch calls through a few dozen functions."""
    try:
        return _NAMES[func]
    except (KeyError, TypeError):
        pass
    name = func_name(func)
    found = (name, (name.endswith("_") and not name.endswith("__")) or name == "setitem")
    if len(_NAMES) < 4096:
        with contextlib.suppress(TypeError):  # an unhashable callable is worked out at each call
            _NAMES[func] = found
    return found


def written_parts(node: Node) -> tuple[Node, Node] | None:
    """A softmax written out by hand, as (what it reads, the node that says over which dimension):
    `exp(x) / exp(x).sum(dim, keepdim=True)` (one exp or two), `log_softmax(x, dim).exp()`,
    `exp(x - logsumexp(x, dim, keepdim=True))`. None for anything else."""
    first = node.inputs[0] if node.inputs and isinstance(node.inputs[0], Node) else None
    if first is None:
        return None
    if node.name == "div" and len(node.inputs) >= 2 and isinstance(node.inputs[1], Node):
        bottom = node.inputs[1]
        summed = bottom.inputs[0] if bottom.inputs and isinstance(bottom.inputs[0], Node) else None
        if first.name != "exp" or bottom.name != "sum" or summed is None or not first.inputs:
            return None
        same = summed is first or (summed.name == "exp" and bool(summed.inputs) and summed.inputs[0] is first.inputs[0])
        x = first.inputs[0]
        return (x, bottom) if same and isinstance(x, Node) else None
    if node.name != "exp":
        return None
    if first.name == "log_softmax" and first.inputs and isinstance(first.inputs[0], Node):
        return first.inputs[0], first
    if first.name == "sub" and len(first.inputs) >= 2 and isinstance(first.inputs[1], Node):
        x, lse = first.inputs[0], first.inputs[1]
        if lse.name == "logsumexp" and isinstance(x, Node) and lse.inputs and lse.inputs[0] is x:
            return x, lse
    return None


def written_softmax(node: Node) -> bool:
    return written_parts(node) is not None
