"""A 2-D slice of a stage with its labels and marks: what every heatmap draws, without torch.

A grid reads its cells through a source that hands out blocks (rows × columns) as
numpy: an array held whole for small stages, or tiles fetched on demand and kept in
a small cache for long inputs, so a frame costs the cells it shows. Its colour range
and marks come precomputed with the stage (`GridStats`) whenever the stage is large.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol

from attn_tui.present.text import printable_labels
from attn_tui.trace.catalog import ColourScale

if TYPE_CHECKING:
    import numpy as np
    import torch

TILE_ROWS, TILE_COLS = 64, 256  # tiles fetched from a lazy source
TILES_KEPT = 32
WHOLE_CELLS = 1 << 22  # `values` of a grid is refused beyond this: read it by blocks


def as_array(tensor: torch.Tensor) -> np.ndarray:
    """A torch tensor of any dtype and device as float64 numpy, through its own methods (no torch import)."""
    return tensor.detach().cpu().double().numpy()


class Cells(Protocol):
    """Where a grid's values (or its mask) come from: any block on demand."""

    shape: tuple[int, int]

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray: ...


class ArrayCells:
    """A block source over an array held whole."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array
        self.shape = (int(array.shape[0]), int(array.shape[1]))

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        return self.array[r0:r1, c0:c1]


class TiledCells:
    """A block source over `fetch(r0, r1, c0, c1)`, fetched by aligned tiles and kept in a small LRU cache.

    `fetch` computes (it may run torch): the app's reader thread calls `load` for what is about to be drawn, and
    the screen reads only what is `ready`; the lock keeps the cache whole between the two threads."""

    def __init__(self, shape: tuple[int, int], fetch: Callable[[int, int, int, int], np.ndarray],
                 dtype: type | None = None) -> None:
        import numpy as np

        self.shape, self.fetch, self.dtype = shape, fetch, dtype or np.float64
        self._tiles: OrderedDict[tuple[int, int], np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self.fetched = 0  # tiles fetched so far: what reading cost

    def _tile(self, tr: int, tc: int) -> np.ndarray:
        with self._lock:
            tile = self._tiles.get((tr, tc))
            if tile is not None:
                self._tiles.move_to_end((tr, tc))
                return tile
        r0, c0 = tr * TILE_ROWS, tc * TILE_COLS
        tile = self.fetch(r0, min(self.shape[0], r0 + TILE_ROWS), c0, min(self.shape[1], c0 + TILE_COLS))
        with self._lock:
            self.fetched += 1
            self._tiles[(tr, tc)] = tile
            if len(self._tiles) > TILES_KEPT:
                self._tiles.popitem(last=False)
        return tile

    @staticmethod
    def _tiles_of(r0: int, r1: int, c0: int, c1: int) -> list[tuple[int, int]]:
        return [(tr, tc) for tr in range(r0 // TILE_ROWS, (r1 - 1) // TILE_ROWS + 1 if r1 > r0 else 0)
                for tc in range(c0 // TILE_COLS, (c1 - 1) // TILE_COLS + 1 if c1 > c0 else 0)]

    def ready(self, r0: int, r1: int, c0: int, c1: int) -> bool:
        """Every tile of the block is fetched: reading it computes nothing."""
        with self._lock:
            return all(tile in self._tiles for tile in self._tiles_of(r0, r1, c0, c1))

    def load(self, r0: int, r1: int, c0: int, c1: int) -> None:
        """Fetch the tiles of the block that are not kept yet (the reader thread's part of drawing it)."""
        for tr, tc in self._tiles_of(r0, r1, c0, c1):
            self._tile(tr, tc)

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        import numpy as np

        if r1 - r0 == 1 and c1 - c0 > 2 * TILE_COLS:  # one long row (a sampled overview): fetched as it is
            return self.fetch(r0, r1, c0, c1)
        out: np.ndarray = np.empty((max(0, r1 - r0), max(0, c1 - c0)), dtype=self.dtype)
        for tr in range(r0 // TILE_ROWS, (r1 - 1) // TILE_ROWS + 1 if r1 > r0 else 0):
            for tc in range(c0 // TILE_COLS, (c1 - 1) // TILE_COLS + 1 if c1 > c0 else 0):
                tile = self._tile(tr, tc)
                tr0, tc0 = tr * TILE_ROWS, tc * TILE_COLS
                a0, a1 = max(r0, tr0), min(r1, tr0 + tile.shape[0])
                b0, b1 = max(c0, tc0), min(c1, tc0 + tile.shape[1])
                out[a0 - r0:a1 - r0, b0 - c0:b1 - c0] = tile[a0 - tr0:a1 - tr0, b0 - tc0:b1 - tc0]
        return out


@dataclass(frozen=True)
class GridStats:
    """A stage's finite range and marks, gathered once (in the worker), so no frame walks the stage."""

    lo: float
    hi: float
    marks: frozenset[str]


@dataclass(frozen=True)
class Grid:
    """A 2-D slice of a stage ready to draw: its cells (an array, or a source of blocks), labels and marks.

    `masked` (same shape, bool) is True where the mask hides a key from a query; None
    when nothing is masked or the stage is not a query × key matrix.
    """

    data: np.ndarray | Cells  # (rows, cols) float64, or a source of blocks
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    row_axis: str = "row"
    col_axis: str = "col"
    masked: np.ndarray | Cells | None = None  # (rows, cols) bool
    probability: bool = False  # rows sum to 1: drawn on 0…1 (the same as colour_scale="probability")
    filled_rows: int | None = None  # rows from here on are not reached yet: drawn blank
    special_rows: frozenset[int] = frozenset()  # labels drawn dimmed: a model's special tokens
    special_cols: frozenset[int] = frozenset()
    stats: GridStats | None = None  # precomputed range and marks; None: worked out from the (small) values
    pad_cols: frozenset[int] = frozenset()  # keys the padding mask hides: their labels are struck through
    miss_rows: frozenset[int] = frozenset()  # a decoder's outputs that differ from the target: labels in red
    colour_scale: ColourScale = "diverging"  # the stage kind's (trace.catalog); probability sets "probability"

    def __post_init__(self) -> None:
        import numpy as np  # not at import time: the app's first frame needs no numpy

        if self.probability or self.colour_scale == "probability":
            object.__setattr__(self, "probability", True)
            object.__setattr__(self, "scale", "probability")
        object.__setattr__(self, "row_labels", printable_labels(tuple(self.row_labels)))
        object.__setattr__(self, "col_labels", printable_labels(tuple(self.col_labels)))
        if isinstance(self.data, (np.ndarray, list)):
            values = np.asarray(self.data, dtype=np.float64)
            values = values.reshape(values.shape[0], -1) if values.size else np.zeros((len(self.row_labels), 0))
            object.__setattr__(self, "data", ArrayCells(values))
        if isinstance(self.masked, (np.ndarray, list)):
            object.__setattr__(self, "masked", ArrayCells(np.asarray(self.masked, dtype=bool)))

    @property
    def source(self) -> Cells:
        assert isinstance(self.data, (ArrayCells, TiledCells)) or hasattr(self.data, "block")
        return self.data

    @property
    def rows(self) -> int:
        return self.source.shape[0]

    @property
    def cols(self) -> int:
        return self.source.shape[1]

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        """Values of rows r0..r1-1 and columns c0..c1-1."""
        return self.source.block(r0, r1, c0, c1)

    def _tiled(self) -> list[TiledCells]:
        return [cells for cells in (self.data, self.masked) if isinstance(cells, TiledCells)]

    def ready(self, r0: int, r1: int, c0: int, c1: int) -> bool:
        """The block's values and mask are at hand: drawing it computes nothing (a grid held whole always is)."""
        return all(cells.ready(r0, r1, c0, c1) for cells in self._tiled())

    def load(self, r0: int, r1: int, c0: int, c1: int) -> None:
        """Compute what the block needs that is not at hand (on the app's reader thread, never its screen's)."""
        for cells in self._tiled():
            cells.load(r0, r1, c0, c1)

    def masked_block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray | None:
        if self.masked is None:
            return None
        return self.masked.block(r0, r1, c0, c1)  # type: ignore[union-attr]

    @property
    def values(self) -> np.ndarray:
        """All the values as one array (small grids only: a large one is read by blocks)."""
        if self.rows * self.cols > WHOLE_CELLS:
            raise ValueError(f"a {self.rows}×{self.cols} grid is read by blocks, never whole")
        return self.block(0, self.rows, 0, self.cols)

    def value(self, i: int, j: int) -> float:
        return float(self.block(i, i + 1, j, j + 1)[0, 0])

    def is_masked(self, i: int, j: int) -> bool:
        block = self.masked_block(i, i + 1, j, j + 1)
        return block is not None and bool(block[0, 0])

    def is_blank(self, i: int) -> bool:
        """A row not reached yet (a decoder step still to come): no colour, no value."""
        return self.filled_rows is not None and i >= self.filled_rows

    def _shown(self) -> np.ndarray:
        """(rows, cols) bool: cells that are drawn with a value (not masked, not blank)."""
        import numpy as np

        hidden = self.masked_block(0, self.rows, 0, self.cols)
        shown = np.ones((self.rows, self.cols), dtype=bool) if hidden is None else ~hidden
        if self.filled_rows is not None:
            shown[self.filled_rows:] = False
        return shown

    def finite_range(self) -> tuple[float, float]:
        """Min and max over the finite, unmasked cells; (0, 0) when there are none."""
        if self.stats is not None:
            return self.stats.lo, self.stats.hi
        import numpy as np

        values = self.values
        found = values[self._shown() & np.isfinite(values)]
        return (float(found.min()), float(found.max())) if found.size else (0.0, 0.0)

    def marks(self) -> set[str]:
        """Which special cells occur: 'masked', '-inf', '+inf', 'nan' (for the legend)."""
        if self.stats is not None:
            return set(self.stats.marks)
        import numpy as np

        reached = np.ones((self.rows, self.cols), dtype=bool)
        if self.filled_rows is not None:
            reached[self.filled_rows:] = False
        shown = self._shown()
        found = {"masked"} if bool((reached & ~shown).any()) else set()
        drawn = self.values[shown]
        if np.isnan(drawn).any():
            found.add("nan")
        if np.isneginf(drawn).any():
            found.add("-inf")
        if np.isposinf(drawn).any():
            found.add("+inf")
        return found


def one_scale(a: Grid, b: Grid) -> tuple[Grid, Grid]:
    """A and B on one colour range, the union of their finite ranges, so one colour is one value on either
    side (compare mode; B − A keeps its own, symmetric about 0). Each keeps its own marks."""
    (a_lo, a_hi), (b_lo, b_hi) = a.finite_range(), b.finite_range()
    lo, hi = min(a_lo, b_lo), max(a_hi, b_hi)
    return (replace(a, stats=GridStats(lo, hi, frozenset(a.marks()))),
            replace(b, stats=GridStats(lo, hi, frozenset(b.marks()))))
