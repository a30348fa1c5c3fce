"""Which leading dimensions of an attention call are batch items (steps) and which are heads.

A dimension along which the queries read other columns of the same projection rows is
a head; any other is a batch item. Code that folds heads into the batch
(`view(L, B * H, d).transpose(0, 1)`, fairseq's way, or `permute(2, 0, 1, 3).view(-1, L, d)`)
has one dimension holding both: it is split in two, so heads stay heads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from attn_tui.sources.recorder.operands import projection, unscaled
from attn_tui.sources.recorder.refs import Ref


@dataclass(frozen=True)
class Layout:
    """The leading dimensions of a call as (batch item, head) slices: `n = b * heads + h`."""

    lead: tuple[int, ...]  # the leading dimensions as the code had them
    split: tuple[int, ...]  # the same, a dimension folding batch and heads split in two
    order: tuple[int, ...]  # dimensions of `split`: the batch ones first, then the heads
    batch: int
    heads: int

    def flat(self, index: torch.Tensor, keep: int | None = None) -> torch.Tensor:
        """(*lead, …) → (n, …) with the batch dimensions first, then the heads; the first `keep` slices."""
        n_lead, n_split = len(self.lead), len(self.split)
        index = index.reshape(*self.split, *index.shape[n_lead:])
        rest = list(range(n_split, index.dim()))
        return index.permute(list(self.order) + rest).reshape(-1, *index.shape[n_split:])[:keep]

    def flat_ref(self, ref: Ref, keep: int | None = None) -> Ref:
        return Ref(ref.node, ref.base, self.flat(ref.index, keep))


def _heads_along(rows: torch.Tensor, offsets: torch.Tensor, d: int) -> bool:
    """Along dimension d the rows read stay the same and the columns move: d is heads."""
    if offsets.shape[d] < 2:
        return False
    same_rows = bool((rows == rows.narrow(d, 0, 1)).all())
    return same_rows and bool((offsets.narrow(d, 1, 1) != offsets.narrow(d, 0, 1)).all())


def _batch_along(offsets: torch.Tensor, d: int) -> bool:
    """Along dimension d every slice reads the same columns: d is batch items."""
    return bool((offsets == offsets.narrow(d, 0, 1)).all())


def _split(rows: torch.Tensor, offsets: torch.Tensor, shape: tuple[int, ...]) -> tuple[int, ...]:
    """`shape` with one dimension that folds batch items and heads split into the two (heads inner or outer)."""
    for d, size in enumerate(shape):
        if size < 4 or _heads_along(rows, offsets, d):
            continue
        for inner in range(2, size // 2 + 1):
            if size % inner:
                continue
            candidate = (*shape[:d], size // inner, inner, *shape[d + 1:])
            r, o = rows.reshape(*candidate, rows.shape[-1]), offsets.reshape(candidate)
            outer_heads, inner_heads = _heads_along(r, o, d), _heads_along(r, o, d + 1)
            if (inner_heads and _batch_along(o, d) and not outer_heads) or \
                    (outer_heads and _batch_along(o, d + 1) and not inner_heads):
                return candidate
    return shape


def layout(lead: tuple[int, ...], query: Ref | None) -> Layout:
    """How the leading dimensions `lead` of a call's queries (*lead, L, d) are batch items and heads."""
    if not lead:
        return Layout((), (), (), 1, 1)
    proj = None
    if query is not None:
        flat = Ref(query.node, query.base, query.index.reshape(-1, *query.shape[-2:]))
        proj = projection(unscaled(flat)[0])
    split = lead
    heads_at: list[int] = []
    if proj is not None:
        rows = proj.rows.reshape(*lead, -1)
        offsets = proj.offsets.reshape(lead)
        split = _split(rows, offsets, lead)
        rows, offsets = rows.reshape(*split, rows.shape[-1]), offsets.reshape(split)
        heads_at = [d for d in range(len(split)) if _heads_along(rows, offsets, d)]
    elif len(lead) >= 2:
        heads_at = [len(lead) - 1]
    batch_at = [d for d in range(len(split)) if d not in heads_at]
    heads = math.prod(split[d] for d in heads_at)
    return Layout(lead, split, tuple(batch_at + heads_at), math.prod(lead) // heads, heads)
