"""Heads of a variant that splits Q, K and V by columns (alibi, sink): where each head's stages sit, and their concat.

The engine hands such a variant (L, d) tensors for one head or (heads, L, d_h) tensors
for several; this turns both into the batched form the score stages take, with the
places of each head's scores and values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from attn_tui.i18n import Msg
from attn_tui.trace.ops import Concat, Place
from attn_tui.trace.stage import Stage, dim_axis

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


@dataclass(frozen=True)
class Heads:
    """q (heads, L, d), k (heads, S, d), v (heads, S, d_v) and each head's places (head None for one head)."""

    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    scores_at: list[Place]
    values_at: list[Place]

    @property
    def count(self) -> int:
        return int(self.q.shape[0])

    @property
    def several(self) -> bool:
        return len(self.scores_at) > 1 or self.scores_at[0].head is not None


def heads_of(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> Heads:
    """(L, d) inputs are one head (places without a head); (heads, L, d_h) inputs are several."""
    if q.dim() == 2:
        return Heads(q[None], k[None], v[None], [Place("scores")], [Place("value")])
    heads = q.shape[0]
    return Heads(q, k, v, [Place("scores", head=h) for h in range(heads)],
                 [Place("value", head=h) for h in range(heads)])


def concat_heads(ctx: Context, heads: Heads, outputs: torch.Tensor, name: str = "output") -> None:
    """The heads' outputs (`name`: gated where the gate is on) side by side (N, heads·d_v): what the layer hands
    on, when there are several."""
    if not heads.several:
        return
    n, width = outputs.shape[1], outputs.shape[0] * outputs.shape[2]
    ctx.trace.add(Stage(Place("concat"), outputs.permute(1, 0, 2).reshape(n, width),
                        Msg("C = [O_0 | O_1 | … ]: the heads' outputs side by side"),
                        (ctx.query_axis, dim_axis(width)),
                        Concat(tuple(Place(name, head=h) for h in range(heads.count)))))
