"""A 2-D slice of a stage as numpy, with its labels and marks: what every heatmap draws, without torch.

Held as arrays so that preparing a stage (its colour range, its marks) is a few
vectorised passes, not a Python loop over N² cells; a frame then reads only the cells
it shows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from attn_tui.present.text import printable

if TYPE_CHECKING:
    import torch


def as_array(tensor: torch.Tensor) -> np.ndarray:
    """A torch tensor of any dtype and device as float64 numpy, through its own methods (no torch import)."""
    return tensor.detach().cpu().double().numpy()


@dataclass(frozen=True)
class Grid:
    """A 2-D slice of a stage as a numpy array, ready to draw without torch.

    Held as arrays so that preparing a stage (its colour range, its marks) is a few
    vectorised passes, not a Python loop over N² cells; a frame then reads only the
    cells it shows. `masked[i, j]` is True where the mask hides key j from query i;
    None when nothing is masked or the stage is not a query × key matrix.
    """

    values: np.ndarray  # (rows, cols) float64; lists are converted
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    row_axis: str = "row"
    col_axis: str = "col"
    masked: np.ndarray | None = None  # (rows, cols) bool
    probability: bool = False
    filled_rows: int | None = None  # rows from here on are not reached yet: drawn blank
    special_rows: frozenset[int] = frozenset()  # labels drawn dimmed: a model's special tokens
    special_cols: frozenset[int] = frozenset()

    def __post_init__(self) -> None:
        object.__setattr__(self, "row_labels", tuple(printable(t) for t in self.row_labels))
        object.__setattr__(self, "col_labels", tuple(printable(t) for t in self.col_labels))
        values = np.asarray(self.values, dtype=np.float64)
        object.__setattr__(self, "values", values.reshape(values.shape[0], -1) if values.size else
                           np.zeros((len(self.row_labels), 0)))
        if self.masked is not None:
            object.__setattr__(self, "masked", np.asarray(self.masked, dtype=bool))

    @property
    def rows(self) -> int:
        return int(self.values.shape[0])

    @property
    def cols(self) -> int:
        return int(self.values.shape[1])

    def is_masked(self, i: int, j: int) -> bool:
        return self.masked is not None and bool(self.masked[i, j])

    def is_blank(self, i: int) -> bool:
        """A row not reached yet (a decoder step still to come): no colour, no value."""
        return self.filled_rows is not None and i >= self.filled_rows

    def _shown(self) -> np.ndarray:
        """(rows, cols) bool: cells that are drawn with a value (not masked, not blank)."""
        shown = np.ones(self.values.shape, dtype=bool) if self.masked is None else ~self.masked
        if self.filled_rows is not None:
            shown[self.filled_rows:] = False
        return shown

    def finite_range(self) -> tuple[float, float]:
        """Min and max over the finite, unmasked cells; (0, 0) when there are none."""
        found = self.values[self._shown() & np.isfinite(self.values)]
        return (float(found.min()), float(found.max())) if found.size else (0.0, 0.0)

    def marks(self) -> set[str]:
        """Which special cells occur: 'masked', '-inf', '+inf', 'nan' (for the legend)."""
        reached = np.ones(self.values.shape, dtype=bool)
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


