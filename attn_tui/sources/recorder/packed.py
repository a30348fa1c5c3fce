"""A single query token's heads folded into the query axis (grouped-query "packing"), unfolded again.

To decode one token with fewer key/value heads than query heads, without repeating the keys,
transformers (`pack_gqa` in its sdpa integration) reshapes the query `(B, H, 1, D)` into
`(B, H_kv, H / H_kv, D)` before calling SDPA: each key/value head's group of query heads then
looks like that many query positions. The kernel's numbers are right, but read as they lie they
say "H_kv heads, H / H_kv queries" where the model has H heads and one query. The packing is
told from the recorded graph, not from a library's version: the query SDPA read is, number for
number, a tensor of the recorded view chain that made it whose query axis is 1 and whose head
axis is the packed heads and rows laid side by side (head `g·R + r` is packed row `r` of group
`g`). Then the call is shown as that tensor's H heads of one query each, every head reading
its group's keys (as `enable_gqa` does), and the mask and the output unfolded the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.refs import Ref, UnfollowableError, broadcast_shape, resolve


@dataclass(frozen=True)
class Packing:
    """A query (…, G, R, D) that is the (…, G·R, 1, D) `unfolded` with its heads' rows as query positions."""

    rows: int  # R: query heads packed into each key/value head's query axis
    unfolded: Ref  # (…, G·R, 1, D): the query as the model made it

    def output(self, ref: Ref) -> Ref:
        """The call's output (…, G, R, dv) as (…, G·R, 1, dv): each query head's one row."""
        *lead, groups, rows, width = ref.shape
        return Ref(ref.node, ref.base, ref.index.reshape(*lead, groups * rows, 1, width))

    def mask(self, mask: torch.Tensor | None, packed: tuple[int, ...]) -> torch.Tensor | None:
        """An attn_mask read against the packed scores (…, G, R, S) as (…, G·R, 1, S): row r of group g is head
        g·R + r's only row. A mask the same for every row and head (…, 1, 1, S) is kept as it is."""
        if mask is None or (mask.dim() >= 2 and mask.shape[-2] == 1 and (mask.dim() < 3 or mask.shape[-3] == 1)):
            return mask
        *lead, groups, rows, keys = broadcast_shape(packed, tuple(mask.shape))
        return mask.expand(*lead, groups, rows, keys).reshape(*lead, groups * rows, 1, keys)


def _chain(node: Node) -> list[Node]:
    """`node` and the tensors its view chain read, nearest first, down to the first one that is no view."""
    chain = [node]
    while chain[-1].is_view and chain[-1].inputs and isinstance(chain[-1].inputs[0], Node):
        chain.append(chain[-1].inputs[0])
    return chain


def packing(query: Node, q_ref: Ref, kv_heads: int, causal: bool) -> Packing | None:
    """The packing of an SDPA call's query (…, G, R, D) against keys with `kv_heads` heads, if the recorded graph
    shows one: a tensor of the query's view chain shaped (…, G·R, 1, D) whose numbers, laid out again as the
    query, are the query's. None for a call whose query positions are positions (and for `is_causal`, under which
    the kernel masks packed rows by their position: no packing would do that)."""
    shape = q_ref.shape
    if causal or len(shape) < 3 or shape[-2] < 2 or shape[-3] != kv_heads:
        return None
    *lead, groups, rows, width = shape
    want = (*lead, groups * rows, 1, width)
    for made in _chain(query)[1:]:
        if tuple(made.value.shape) != want:
            continue
        try:
            ref = resolve(made)
        except UnfollowableError:
            return None
        if ref.base is q_ref.base and bool(torch.equal(ref.index, q_ref.index.reshape(want))):
            return Packing(rows, ref)
    return None
