"""A softmax that is not attention: probabilities over a layer's outputs (a classifier's, a vocabulary's).

`generate(do_sample=True)` takes `softmax(lm_head(h)[:, -1] / T)` over 30k tokens; a classifier takes
`softmax(head(h))` over its classes. Their scores are a projection onto a parameter's rows, and the softmax
runs over those rows: no query meets a key. Attention's scores come from a product of two activations
(Q·Kᵀ) or from an energy scored per key (Bahdanau's `Va(tanh(…))`, a linear to one number for each key, the
softmax over the keys). Told apart when the trace is built, from the graph the recorder keeps anyway: the
recording itself pays nothing for it. A softmax whose weights then mix value rows stays attention whatever
made its scores (Luong's location scores `softmax(W_a h)` over source positions).
"""

from __future__ import annotations

import math

import torch

from attn_tui.sources.recorder.contract import is_product, rows_and_cols
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.refs import Ref, operand_ref, resolve

MAX_STEPS = 32  # elementwise steps walked back past where the recogniser stopped (a sampler's processors)


class NotAttentionError(Exception):
    """A softmax over a layer's outputs: left out of the trace, with no warning."""


def learned(node: object) -> bool:
    """A module's parameter, seen through views and casts (`lm_head.weight`, `embed.weight.T`, `w.to(float32)`).
    A tensor that merely requires grad (a toy's `q = torch.randn(…, requires_grad=True)`) is no layer's weight."""
    for _ in range(16):
        if not isinstance(node, Node):
            return False
        if not (node.is_view or node.name == "cast"):
            return node.is_param and node.param is not None
        node = node.inputs[0] if node.inputs else None
    return False


def over_outputs(linear: Node, positions: torch.Tensor) -> bool:
    """Each softmax row (the last dimension of `positions`, flat positions in the linear's output) runs over
    the output features of one input row, and the weight is a parameter: a projection onto its rows."""
    weight = linear.inputs[1] if len(linear.inputs) > 1 else linear.kwargs.get("weight")
    features = linear.value.shape[-1] if linear.value.dim() else 1
    if not learned(weight) or features < 2 or positions.dim() == 0 or positions.shape[-1] < 2:
        return False
    rows = torch.div(positions, features, rounding_mode="floor")  # (…, S) which input row each score is of
    return bool((rows == rows[..., :1]).all())


def over_learned_rows(scores: Ref) -> bool:
    """The scores, from where the recogniser's walk stopped, are a projection onto a parameter's rows with the
    softmax over those rows. Steps the recogniser could not name (a sampler's `scatter` of penalised scores, a
    `where`) are walked through by the input of their own shape, which holds each score where it is."""
    ref = scores
    try:
        for _ in range(MAX_STEPS):
            node = ref.node
            if node is None:
                return False
            if node.kind is Kind.LINEAR:
                return over_outputs(node, ref.index)
            if is_product(node):
                _, key = rows_and_cols(node, ref.index)  # the rows the softmax runs over
                return learned(key.node)
            if node.name == "pad":
                ref = _unpadded(node, ref)
                continue
            if node.name == "sort" and _dim(node, 1) != node.value.dim() - 1:
                return False  # sorted along another dimension: a row of it holds numbers of several rows
            source = next((a for a in node.inputs if isinstance(a, Node) and a.value.shape == node.value.shape
                           and a.value.is_floating_point()), None)
            if source is None:
                return False
            ref = operand_ref(node, source, ref.index)  # elementwise, sorted or scattered along a row: same rows
    except Exception:  # a step this walk cannot follow: the softmax stays in the trace, as attention
        return False
    return False


def _dim(node: Node, at: int) -> int:
    dim = node.inputs[at] if len(node.inputs) > at and isinstance(node.inputs[at], int) else node.kwargs.get("dim", -1)
    return int(dim) % max(node.value.dim(), 1)


def _unpadded(node: Node, ref: Ref) -> Ref:
    """`F.pad(x, (0, 1))` (a constant pad, as a sampler's repetition penalty adds a column): the positions of x that
    the padded positions of `ref` hold. ValueError when one of them is padding, or the pad is not a constant's."""
    source, pads = node.inputs[0], node.inputs[1] if len(node.inputs) > 1 else node.kwargs.get("pad")
    mode = node.inputs[2] if len(node.inputs) > 2 else node.kwargs.get("mode", "constant")
    if not isinstance(source, Node) or not isinstance(pads, (tuple, list)) or mode != "constant":
        raise ValueError("pad")
    shape, inner = tuple(node.value.shape), tuple(source.value.shape)
    flat = torch.zeros_like(ref.index)
    for d in range(len(shape)):  # coordinates, last dimension first, as pad's (left, right) pairs are given
        stride = math.prod(shape[d + 1:])
        at = torch.div(ref.index, stride, rounding_mode="floor") % shape[d]
        back = len(shape) - 1 - d
        at = at - (int(pads[2 * back]) if 2 * back < len(pads) else 0)
        if bool(((at < 0) | (at >= inner[d])).any()):
            raise ValueError("pad")
        flat = flat + at * math.prod(inner[d + 1:])
    return resolve(source).take(flat)
