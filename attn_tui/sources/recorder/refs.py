"""Which numbers of which recorded tensor a value is: views replayed on index tensors.

A learner's Q for head 2 is `qkv.reshape(B, L, 3, H, d).permute(2, 0, 3, 1, 4)[0][:, 2]`.
Replaying those very calls on `arange(qkv.numel())` tells, for every number of that
slice, which number of `qkv` it is; from there, which row of which projection and which
column of its weight. A Ref is that answer: a base tensor and an index into it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node, Origin

MAX_INDEX = 1 << 24  # numbers a view may hold for the recogniser to follow it (int64 indices: 128 MiB)


_SHARED: list[torch.Tensor] = []  # one arange the whole layout reads: its prefixes are every `whole` index


def counting(count: int) -> torch.Tensor:
    """arange(count), read-only: a prefix of one shared tensor, so an index that is one can be told in O(1).

    Most refs of a long attention are the numbers of a node as they lie (`whole`); knowing
    so spares a gather of L×S int64 at every step (`plain`). `release()` frees it after a layout.
    """
    if not _SHARED or _SHARED[0].numel() < count:
        _SHARED[:] = [torch.arange(max(count, 2 * _SHARED[0].numel() if _SHARED else 0))]
    return _SHARED[0][:count]


def release() -> None:
    _SHARED.clear()


def plain(index: torch.Tensor) -> bool:
    """The index is arange(n) shaped as it is: position k of the ref is position k of its base."""
    return bool(_SHARED) and index.dtype == torch.long and index.numel() > 0 and index.is_contiguous() \
        and index.data_ptr() == _SHARED[0].data_ptr()


class UnfollowableError(Exception):
    """A view the recogniser cannot replay: what it reads is shown as given."""


@dataclass(frozen=True, eq=False)
class Ref:
    """Numbers `base.flatten()[index]` of a recorded node (or of a tensor computed here), shaped like `index`."""

    node: Node | None
    base: torch.Tensor
    index: torch.Tensor  # int64, any shape: flat positions in `base`

    @property
    def values(self) -> torch.Tensor:
        if plain(self.index) and self.index.numel() <= self.base.numel():
            return self.base.reshape(-1)[:self.index.numel()].reshape(self.index.shape)  # as it lies: a view
        return self.base.reshape(-1)[self.index]

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.index.shape)

    @property
    def origin(self) -> Origin | None:
        return None if self.node is None else self.node.origin

    def take(self, index: torch.Tensor) -> Ref:
        """The numbers at `index` (flat positions in this ref)."""
        if plain(self.index):
            return Ref(self.node, self.base, index)  # arange(n)[index] is index
        return Ref(self.node, self.base, self.index.reshape(-1)[index])

    def map(self, fn: Any) -> Ref:
        """Apply a shape function (permute, slicing…) to this ref's index."""
        return Ref(self.node, self.base, fn(self.index))

    def same(self, other: Ref) -> bool:
        return self.base is other.base and self.index.shape == other.index.shape and bool(
            torch.equal(self.index, other.index))


def whole(node: Node) -> Ref:
    return Ref(node, node.value, counting(node.value.numel()).reshape(node.value.shape))


def of_tensor(tensor: torch.Tensor, node: Node | None = None) -> Ref:
    """A tensor computed by the recogniser itself (SDPA's and MultiheadAttention's inner stages)."""
    return Ref(node, tensor, counting(tensor.numel()).reshape(tensor.shape))


def base_of(node: Node) -> Node:
    while node.is_view:
        source = node.inputs[0] if node.inputs and isinstance(node.inputs[0], Node) else None
        if source is None:
            raise UnfollowableError(node.name)
        node = source
    return node


def _unwrap(value: Any) -> Any:
    if isinstance(value, Node):
        return value.value
    if isinstance(value, tuple):
        return tuple(_unwrap(v) for v in value)
    return value


def resolve(node: Node) -> Ref:
    """The ref of a node: itself for an op, the numbers of its base node for a view (or for pieces of one
    node joined again: `torch.stack(q.split(d, -1), 1)`, the heads of one output put back side by side)."""
    if node.kind is Kind.CAT:
        found = joined(node)
        if found is not None:
            return found
    if not node.is_view:
        return whole(node)
    if node.value.numel() > MAX_INDEX:
        raise UnfollowableError(node.name)
    source = node.inputs[0] if node.inputs and isinstance(node.inputs[0], Node) else None
    if source is None:
        raise UnfollowableError(node.name)
    inner = resolve(source)
    index = replay(node, inner.index)
    if tuple(index.shape) != tuple(node.value.shape):
        raise UnfollowableError(node.name)
    return Ref(inner.node, inner.base, index)


def joined(node: Node) -> Ref | None:
    """`cat` / `stack` of views of one and the same node, as a ref into that node; None for anything else."""
    parts = node.inputs[0] if node.inputs and isinstance(node.inputs[0], tuple) else ()
    dim = node.kwargs.get("dim", node.inputs[1] if len(node.inputs) > 1 else 0)
    if not parts or not all(isinstance(p, Node) for p in parts) or not isinstance(dim, int):
        return None
    try:
        refs = [resolve(p) for p in parts]
    except UnfollowableError:
        return None
    first = refs[0]
    if first.node is None or any(r.node is not first.node or r.base is not first.base for r in refs):
        return None
    try:
        index = (torch.cat if node.name == "cat" else torch.stack)([r.index for r in refs], dim=dim)
    except (RuntimeError, IndexError):
        return None
    return Ref(first.node, first.base, index) if tuple(index.shape) == tuple(node.value.shape) else None


def replay(node: Node, index: torch.Tensor) -> torch.Tensor:
    """The same view call on an index tensor in place of the tensor it read."""
    name = node.name.rstrip("_")
    args = (index, *(_unwrap(a) for a in node.inputs[1:]))
    kwargs = {k: _unwrap(v) for k, v in node.kwargs.items()}
    try:
        if name in ("T", "mT", "data", "detach", "contiguous", "clone"):
            out: Any = {"T": lambda t: t.permute(*range(t.dim() - 1, -1, -1)), "mT": lambda t: t.transpose(-2, -1)
                        }.get(name, lambda t: t)(index)
        elif name == "getitem":
            out = index[args[1]]
        elif name in ("view_as", "reshape_as", "expand_as"):
            shape = args[1].shape
            out = index.expand(shape) if name == "expand_as" else index.reshape(shape)
        elif name == "view":
            out = index.reshape(*args[1:], **kwargs)
        else:
            out = getattr(torch.Tensor, name)(*args, **kwargs)
    except Exception as exc:
        raise UnfollowableError(node.name) from exc
    if isinstance(out, (tuple, list)):
        out = out[node.part or 0]
    if not isinstance(out, torch.Tensor):
        raise UnfollowableError(node.name)
    return out


def broadcast_index(operand: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """For each position of a broadcast result of `shape`, the flat position in `operand` it read."""
    index = counting(operand.numel()).reshape(operand.shape)
    return index.expand(shape) if tuple(index.shape) != shape else index


def operand_ref(op: Node, operand: Node, positions: torch.Tensor) -> Ref:
    """The numbers of `operand` that an elementwise op read at its own flat `positions` (broadcasting)."""
    inner = resolve(operand)
    if tuple(operand.value.shape) == tuple(op.value.shape):
        return inner.take(positions)  # no broadcast: the op's position k read the operand's position k
    spread = broadcast_index(operand.value, tuple(op.value.shape)).reshape(-1)
    return inner.take(spread[positions.reshape(-1)].reshape(positions.shape))


def broadcast_shape(*shapes: tuple[int, ...] | torch.Size) -> tuple[int, ...]:
    """The shape several shapes broadcast to (torch.broadcast_shapes imports more than it needs here)."""
    width = max((len(s) for s in shapes), default=0)
    out = []
    for dims in zip(*((1,) * (width - len(s)) + tuple(s) for s in shapes)):
        sizes = {d for d in dims if d != 1}
        if len(sizes) > 1:
            raise UnfollowableError(f"shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)


def unravel(flat: torch.Tensor, shape: tuple[int, ...]) -> list[torch.Tensor]:
    """Flat positions → one index tensor per dimension of `shape`."""
    out = []
    for size in reversed(shape):
        out.append(flat % size)
        flat = torch.div(flat, size, rounding_mode="floor")
    return out[::-1]
