"""Score stages that are never held whole: any tile of them is computed when it is asked for.

At 16,384 tokens one (L, S) stage is a gigabyte. A lazy stage keeps only what makes
it (the queries and keys, a mask described by its parts, and after one streaming pass
the log-sum-exp of every row), so the tile on screen costs rows × columns × d, and the
weight of any cell is exp(masked − lse_row): the quantity flash attention keeps too.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

import torch

from attn_tui.trace import masks
from attn_tui.trace.masks import FILLS, MaskSpec

MATERIALIZE_CELLS = 1 << 22  # a lazy stage may still be made whole up to this many values (tests, small exports)
TILE_CACHE_CELLS = 1 << 23  # values kept for the screen (all stages and heads of the tiles seen last)

# (rows, cols) → the stages before the mask, each (heads, rows, cols) or (heads, rows, cols, hidden)
PreTile = Callable[[slice, slice], dict[str, torch.Tensor]]


@dataclass(eq=False)
class ScoreTiles:
    """How the heads' scores, scaled scores, masked scores and weights are computed for any tile.

    `pre(rows, cols)` returns the stages before the mask (scores, and scaled when the
    variant scales; an energy too for additive and concat), with `last` the one the mask
    applies to. `lse` is filled by the streaming pass (`attention.attend.stream`).
    """

    pre: PreTile
    last: str
    shape: tuple[int, int]  # (L, S)
    mask: MaskSpec | None
    fill: str
    temperature: float
    lse: torch.Tensor | None = None  # (heads, L) log-sum-exp of each masked row; -inf for an empty row
    _cache: OrderedDict[tuple[int, int, int, int], dict[str, torch.Tensor]] = field(default_factory=OrderedDict)
    _cached_cells: int = 0

    def masked(self, before: torch.Tensor, rows: slice, cols: slice) -> torch.Tensor:
        """The masked stage of a tile, from the tile of the stage before it (the shared tail's rule)."""
        promoted = before.to(masks.softmax_dtype(before.dtype))
        divided = promoted / self.temperature if self.temperature != 1 else promoted
        if self.mask is None:
            return divided
        return divided.masked_fill(~self.mask.tile(rows, cols).to(divided.device), FILLS[self.fill])

    def weights(self, masked: torch.Tensor, rows: slice) -> torch.Tensor:
        """exp(masked − lse) for the tile's rows; a row with nothing to attend is 0, as SDPA gives."""
        assert self.lse is not None, "the streaming pass has not run"
        lse = self.lse[:, rows].to(masked.device)[..., None]  # (heads, rows, 1)
        return torch.exp(masked - lse).masked_fill(torch.isneginf(lse), 0.0)

    def tile(self, name: str, rows: slice, cols: slice, keep: bool = True) -> torch.Tensor:
        """Stage `name` on rows × cols for every head, computed once and kept while it is on screen.

        `keep=False` is for a single pass over the whole stage (an export): its blocks are
        seen once, so they must not push the screen's tiles out of the cache.
        """
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        key = (r0, r1, c0, c1)
        tiles = self._cache.get(key)
        if tiles is None:
            rows, cols = slice(r0, r1), slice(c0, c1)
            tiles = dict(self.pre(rows, cols))
            tiles["masked"] = self.masked(tiles[self.last], rows, cols)
            tiles["weights"] = self.weights(tiles["masked"], rows)
            if keep:
                self._keep(key, tiles)
        else:
            self._cache.move_to_end(key)
        return tiles[name]

    def _keep(self, key: tuple[int, int, int, int], tiles: dict[str, torch.Tensor]) -> None:
        """Cache a tile for the screen, oldest out first, within TILE_CACHE_CELLS values."""
        cells = sum(t.numel() for t in tiles.values())
        if cells > TILE_CACHE_CELLS:
            return
        self._cache[key] = tiles
        self._cached_cells += cells
        while self._cached_cells > TILE_CACHE_CELLS:
            _, old = self._cache.popitem(last=False)
            self._cached_cells -= sum(t.numel() for t in old.values())


class LazyTensor:
    """Stands in for one head's stage: its shape, and any tile on demand through `[...]`.

    Indexing with ints and slices on the first two axes gives a real tensor of that
    tile (rows × cols, × hidden for an energy); nothing else of a tensor is offered, so
    no view can walk the whole stage by accident.
    """

    def __init__(self, tiles: ScoreTiles, name: str, head: int, shape: tuple[int, ...], dtype: torch.dtype,
                 device: torch.device) -> None:
        self.tiles, self.name, self.head = tiles, name, head
        self.shape = torch.Size(shape)
        self.dtype, self.device = dtype, device

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return self.shape.numel()

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def __getitem__(self, index: object) -> torch.Tensor:
        parts = index if isinstance(index, tuple) else (index,)
        rows, cols, rest = parts[0], parts[1] if len(parts) > 1 else slice(None), parts[2:]
        row_slice = slice(rows, rows + 1) if isinstance(rows, int) else rows
        col_slice = slice(cols, cols + 1) if isinstance(cols, int) else cols
        if not isinstance(row_slice, slice) or not isinstance(col_slice, slice):
            raise TypeError("a lazy stage is read by ints and slices only")
        out = self.tiles.tile(self.name, row_slice, col_slice)[self.head]
        picks = (0 if isinstance(rows, int) else slice(None), 0 if isinstance(cols, int) else slice(None), *rest)
        return out[picks]

    def rows(self, start: int, stop: int) -> torch.Tensor:
        """Rows start…stop, every column, computed for one pass and not cached (exports stream this way)."""
        return self.tiles.tile(self.name, slice(start, stop), slice(None), keep=False)[self.head]

    def whole(self) -> torch.Tensor:
        """The whole stage as one tensor (only for stages small enough to hold)."""
        if self.numel() > MATERIALIZE_CELLS:
            raise ValueError(f"stage {self.name} has {self.numel():,} values; it is read by tiles, never whole")
        return self[:, :]
