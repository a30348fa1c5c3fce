"""What every call laid out by tiles shares (a long SDPA call's, a long flex_attention call's): the lazy role's
slices, and the stats of its stages folded over the cells the kernel kept, block by block of query rows."""

from __future__ import annotations

import math

import torch

from attn_tui.trace.lazy import LazyTensor, ScoreTiles
from attn_tui.trace.stage_stats import StageStats


class Slices:
    """A lazy role's data: slice n is a LazyTensor of the score tiles' stage `name`."""

    def __init__(self, tiles: ScoreTiles, name: str, dtype: torch.dtype, device: torch.device) -> None:
        self.tiles, self.name, self.dtype, self.device = tiles, name, dtype, device

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.tiles.lse.shape[0] if self.tiles.lse is not None else 0, *self.tiles.shape)

    def dim(self) -> int:
        return 3

    def __getitem__(self, n: int) -> LazyTensor:
        return LazyTensor(self.tiles, self.name, n, self.tiles.shape, self.dtype, self.device)


def fold_kept(found: list[StageStats], block: torch.Tensor, kept: torch.Tensor) -> None:
    """Fold (n, rows, S) into each slice's stats over its kept cells: one reduction for all slices, the exact
    per-cell path only for a slice whose kept cells are not all finite."""
    n = block.shape[0]
    flat, keep = block.reshape(n, -1), kept.reshape(n, -1)
    lo = flat.masked_fill(~keep, torch.inf).amin(dim=-1).tolist()
    hi = flat.masked_fill(~keep, -torch.inf).amax(dim=-1).tolist()
    hidden = (~keep).sum(dim=-1).tolist()
    some = keep.any(dim=-1).tolist()
    for i, stats in enumerate(found):
        if not some[i]:
            stats.masked += int(hidden[i])
        elif math.isfinite(lo[i]) and math.isfinite(hi[i]):
            stats.masked += int(hidden[i])
            stats.add_finite(lo[i], hi[i])
        else:
            stats.add(block[i], kept[i])
