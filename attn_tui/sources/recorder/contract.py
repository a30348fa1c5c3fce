"""A product of two tensors, however the code spelled it, as one bilinear form `out = left @ right`.

Learners write QKᵀ as `q @ k.T`, `torch.bmm`, `einsum("bhqd,bhkd->bhqk")`,
`torch.sum(hidden * keys, dim=2)` (the PyTorch chatbot tutorial's Luong score), and the
weighted sum as `(weights * values).sum(1)`; a single query may sit on the right,
`keys @ query`. All are one contraction: some batch dimensions, at most one dimension
of each operand's own (the queries, the keys; a missing one counts as size 1) and the
summed dimensions. Said as index tensors (*b, M, K), (*b, K, N) and (*b, M, N), the rest
of the recogniser need not know which spelling it was.
"""

from __future__ import annotations

import math

import torch

from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.refs import Ref, broadcast_index, broadcast_shape, counting, plain, resolve, unravel

Bilinear = tuple[Ref, Ref, torch.Tensor]  # left (*b, M, K), right (*b, K, N), out_index (*b, M, N)


class UnrecognisedError(Exception):
    """An attention the recogniser cannot lay out; the message says why."""


class NotOneQueryPerRowError(UnrecognisedError):
    """The scores do not read one query per row and one key per column."""


def is_product(node: Node) -> bool:
    """A node that multiplies two tensors and sums over what they share (a sum of a product included)."""
    return node.kind is Kind.CONTRACT or (node.kind is Kind.SUM and _summed_product(node) is not None)


def bilinear(node: Node) -> Bilinear | None:
    """A product as (left (*b, M, K), right (*b, K, N), out_index (*b, M, N) into the node's value)."""
    if node.kind is Kind.SUM:
        return _sum_of_product(node)
    if node.kind is not Kind.CONTRACT:
        return None
    if node.name == "einsum":
        return _einsum(node)
    tensors = [a for a in node.inputs if isinstance(a, Node)]
    if len(tensors) != 2:
        return None
    a, b = (tensors[1], tensors[0]) if node.name == "rmatmul" else (tensors[0], tensors[1])
    left, right = resolve(a), resolve(b)
    li = left.index if left.index.dim() > 1 else left.index[None, :]
    ri = right.index if right.index.dim() > 1 else right.index[:, None]
    batch = broadcast_shape(li.shape[:-2], ri.shape[:-2])
    li = li.expand(*batch, *li.shape[-2:])
    ri = ri.expand(*batch, *ri.shape[-2:])
    out_index = counting(node.value.numel()).reshape(*batch, li.shape[-2], ri.shape[-1])
    return Ref(left.node, left.base, li), Ref(right.node, right.base, ri), out_index


def transposed(form: Bilinear) -> Bilinear:
    """The same product read the other way: outᵀ = rightᵀ @ leftᵀ (`keys @ query`, `values * weights`)."""
    left, right, out_index = form
    return (Ref(right.node, right.base, right.index.transpose(-2, -1)),
            Ref(left.node, left.base, left.index.transpose(-2, -1)), out_index.transpose(-2, -1))


def _labelled(a: Ref, a_labels: str, b: Ref, b_labels: str, out: torch.Tensor, out_labels: str) -> Bilinear | None:
    """Index tensors whose dimensions carry einsum labels, as a bilinear form (None when it is not one)."""
    if len(set(a_labels)) != len(a_labels) or len(set(b_labels)) != len(b_labels) \
            or len(set(out_labels)) != len(out_labels):
        return None
    batch = [c for c in out_labels if c in a_labels and c in b_labels]
    m = [c for c in out_labels if c in a_labels and c not in b_labels]
    n = [c for c in out_labels if c in b_labels and c not in a_labels]
    k = [c for c in a_labels if c in b_labels and c not in out_labels]
    if len(m) > 1 or len(n) > 1 or not k or set(a_labels) != set(batch + m + k) \
            or set(b_labels) != set(batch + n + k) or set(out_labels) != set(batch + m + n):
        return None
    sizes = {c: max(dict(zip(a_labels, a.index.shape)).get(c, 1), dict(zip(b_labels, b.index.shape)).get(c, 1))
             for c in a_labels + b_labels}
    a = Ref(a.node, a.base, a.index.expand([sizes[c] for c in a_labels]))  # a batch of 1 broadcast to the other's
    b = Ref(b.node, b.base, b.index.expand([sizes[c] for c in b_labels]))
    lead = [sizes[c] for c in batch]
    width = math.prod(sizes[c] for c in k)
    li = a.index.permute([a_labels.index(c) for c in batch + m + k]).reshape(*lead, sizes[m[0]] if m else 1, width)
    ri = b.index.permute([b_labels.index(c) for c in batch + k + n]).reshape(*lead, width, sizes[n[0]] if n else 1)
    oi = out.permute([out_labels.index(c) for c in batch + m + n]).reshape(*lead, li.shape[-2], ri.shape[-1])
    return Ref(a.node, a.base, li), Ref(b.node, b.base, ri), oi


def _einsum(node: Node) -> Bilinear | None:
    equation = node.inputs[0] if node.inputs and isinstance(node.inputs[0], str) else None
    operands = [a for a in node.inputs[1:] for a in (a if isinstance(a, tuple) else (a,)) if isinstance(a, Node)]
    if equation is None or len(operands) != 2 or "->" not in equation:
        return None
    lhs, out = equation.replace(" ", "").split("->")
    if lhs.count(",") != 1:
        return None
    left, right = resolve(operands[0]), resolve(operands[1])
    a, b, out = _without_ellipsis(lhs.split(","), (left.index.dim(), right.index.dim()), out)
    if left.index.dim() != len(a) or right.index.dim() != len(b) or node.value.dim() != len(out):
        return None
    out_index = counting(node.value.numel()).reshape(node.value.shape)
    return _labelled(left, a, right, b, out_index, out)


def _without_ellipsis(inputs: list[str], ndims: tuple[int, ...], out: str) -> tuple[str, str, str]:
    """`...ij,...jd->...id` with the `...` spelled out as labels of their own (right-aligned, as einsum reads them)."""
    if "..." not in "".join(inputs) + out:
        return inputs[0], inputs[1], out
    counts = [ndim - (len(term) - 3) if "..." in term else 0 for term, ndim in zip(inputs, ndims)]
    width = max(counts + [0])
    spelled = "".join(chr(0x3B1 + n) for n in range(width))  # Greek letters: never einsum's own labels
    terms = [term.replace("...", spelled[width - count:] if count > 0 else "") for term, count in zip(inputs, counts)]
    return terms[0], terms[1], out.replace("...", spelled)


def _summed_product(node: Node) -> tuple[Node, Node, Node, int] | None:
    """`sum(a * b, dim)`: (the product, a, b, the summed dimension of the product)."""
    product = node.inputs[0] if node.inputs else None
    dim = node.inputs[1] if len(node.inputs) > 1 else node.kwargs.get("dim")
    if isinstance(dim, (tuple, list)) and len(dim) == 1:
        dim = dim[0]
    if not isinstance(product, Node) or product.name != "mul" or not isinstance(dim, int) or len(product.inputs) < 2:
        return None
    a, b = product.inputs[0], product.inputs[1]
    if not isinstance(a, Node) or not isinstance(b, Node) or product.value.dim() == 0:
        return None
    return product, a, b, dim % product.value.dim()


def _sum_of_product(node: Node) -> Bilinear | None:
    """`torch.sum(a * b, dim)`: each operand's dimensions are those it does not broadcast along."""
    found = _summed_product(node)
    if found is None:
        return None
    product, a, b, dim = found
    shape = tuple(product.value.shape)
    labels = "".join(chr(ord("a") + d) for d in range(len(shape)))
    refs, kept = [], []
    for operand in (a, b):
        inner = resolve(operand)
        spread = broadcast_index(operand.value, shape)  # (*shape): flat positions in the operand
        own = [d for d in range(len(shape)) if shape[d] > 1 and _size(operand.value, d, len(shape)) == shape[d]]
        if dim not in own:
            return None  # the sum runs over one operand only: not a product of the two
        pick = tuple(slice(None) if d in own else 0 for d in range(len(shape)))
        refs.append(Ref(inner.node, inner.base, inner.index.reshape(-1)[spread[pick]]))
        kept.append("".join(labels[d] for d in own))
    out_labels = "".join(labels[d] for d in range(len(shape)) if d != dim and shape[d] > 1)
    out_dims = [d for d in range(len(shape)) if d != dim and shape[d] > 1]
    out_index = torch.arange(node.value.numel()).reshape(-1)
    out_index = out_index.reshape([shape[d] for d in out_dims]) if out_dims else out_index.reshape(())
    return _labelled(refs[0], kept[0], refs[1], kept[1], out_index, out_labels)


def _size(value: torch.Tensor, d: int, ndim: int) -> int:
    """The size of `value` along dimension d of an ndim-dimensional broadcast."""
    at = d - (ndim - value.dim())
    return 1 if at < 0 else int(value.shape[at])


def rows_and_cols(product: Node, positions: torch.Tensor) -> tuple[Ref, Ref]:
    """For score positions (…, L, S) in a product: the left rows (…, L, K) and right rows (…, S, K) they read.

    The queries are the operand that varies along the rows of the scores, whichever side it was on.
    """
    found = bilinear(product)
    if found is None:
        raise NotOneQueryPerRowError(f"{product.name} is not a product of two matrices")
    try:
        return _rows_and_cols(found, positions)
    except NotOneQueryPerRowError:
        return _rows_and_cols(transposed(found), positions)


def _rows_and_cols(found: Bilinear, positions: torch.Tensor) -> tuple[Ref, Ref]:
    left, right, out_index = found
    rows, width = left.index.shape[-2], left.index.shape[-1]
    left3 = left.index.reshape(-1, rows, width)
    right3 = right.index.reshape(-1, width, right.index.shape[-1]).transpose(1, 2)  # (B', N, K)
    if plain(out_index) and plain(positions) and positions.numel() == out_index.numel() \
            and positions.dim() >= 2 and positions.shape[-2:] == out_index.shape[-2:]:
        # the scores as the product made them: slice n, row i, column j is the product's own (n, i, j)
        lead, (length, keys) = tuple(positions.shape[:-2]), tuple(positions.shape[-2:])
        slices = torch.arange(math.prod(lead)).reshape(*lead, 1)
        q = left3[slices.expand(*lead, length), torch.arange(length).expand(*lead, length)]  # (…, L, K)
        k = right3[slices.expand(*lead, keys), torch.arange(keys).expand(*lead, keys)]  # (…, S, K)
        return Ref(left.node, left.base, q), Ref(right.node, right.base, k)
    inverse = torch.empty(out_index.numel(), dtype=torch.long)
    inverse[out_index.reshape(-1)] = torch.arange(out_index.numel())
    where = unravel(inverse[positions], tuple(out_index.shape))
    batch = torch.zeros_like(positions)
    for size, part in zip(out_index.shape[:-2], where[:-2]):
        batch = batch * size + part
    i, j = where[-2], where[-1]
    if not (bool((batch == batch[..., :1, :1]).all()) and bool((i == i[..., :, :1]).all())
            and bool((j == j[..., :1, :]).all())):
        raise NotOneQueryPerRowError("the scores are not one query per row and one key per column")
    q = left3[batch[..., :, 0], i[..., :, 0]]  # (…, L, K)
    k = right3[batch[..., 0, :], j[..., 0, :]]  # (…, S, K)
    return Ref(left.node, left.base, q), Ref(right.node, right.base, k)
