"""Calls that do several steps of attention at once, taken apart into the steps the recogniser knows.

`torch.baddbmm(bias, q, kᵀ, beta=β, alpha=α)` is β·bias + α·(q @ kᵀ): the scores, their
scale and an added bias (or mask) in one call, as Hugging Face's attention writes it.
The parts are made here as nodes of their own; the outermost keeps the very numbers the
call returned, so what the softmax read is still what the code computed.
"""

from __future__ import annotations

import torch

from attn_tui.sources.recorder.kinds import KINDS, Kind
from attn_tui.sources.recorder.node import Node, version_of

PRODUCT_INSIDE = {"baddbmm": "bmm", "addmm": "mm"}  # each call of Kind.FUSED → the product inside it


def _number(value: object, default: float) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def unfused(node: Node) -> Node | None:
    """`beta·input + alpha·(b1 @ b2)` as nodes: product, then its scale, then the sum (None if not such a call)."""
    if node.kind is not Kind.FUSED or len(node.inputs) < 3:
        return None
    added, left, right = node.inputs[:3]
    beta, alpha = _number(node.kwargs.get("beta"), 1.0), _number(node.kwargs.get("alpha"), 1.0)
    if not all(isinstance(t, Node) for t in (added, left, right)) or beta is None or alpha is None:
        return None
    assert isinstance(added, Node) and isinstance(left, Node) and isinstance(right, Node)

    def part(name: str, value: torch.Tensor, inputs: tuple[object, ...]) -> Node:
        return Node(name, value, inputs, origin=node.origin, scope=node.scope, version=version_of(value),
                    kind=KINDS[name])

    top = part(PRODUCT_INSIDE[node.name], torch.matmul(left.value, right.value), (left, right))
    if alpha != 1.0:
        top = part("mul", top.value * alpha, (top, alpha))
    if beta != 0.0 and bool(added.value.ne(0).any()):
        bias = added if beta == 1.0 else part("mul", added.value * beta, (added, beta))
        top = part("add", node.value, (top, bias))
    else:
        top.value, top.version = node.value, version_of(node.value)  # the call's own numbers, bit for bit
    return top
