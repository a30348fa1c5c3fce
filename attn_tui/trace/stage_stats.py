"""What every stage holds at a glance: its finite range, its non-finite cells, its marks, folded in block by block.

The record itself lives here, below the Trace that keeps one per stage; `trace.values` gathers it over a
trace's stages (and re-exports it), so the trace does not import the pass that fills it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch


def worse(a: float, b: float) -> float:
    """The larger of two deviations, NaN when either is: `max` would keep whichever came first."""
    return math.nan if math.isnan(a) or math.isnan(b) else max(a, b)


@dataclass
class StageStats:
    """A stage's finite range over the cells it keeps, what else it holds, and (for weights) its row sums."""

    lo: float = math.inf
    hi: float = -math.inf
    nan: int = 0
    posinf: int = 0
    neginf: int = 0
    masked: int = 0  # cells hidden by the mask (their value is the fill, or 0 for weights)
    row_deviation: float = 0.0  # weights: the largest |row sum − 1| over rows that may attend somewhere (NaN: a
    # row that is not a number, which sums to nothing)
    empty_rows: list[int] = field(default_factory=list)  # weights: rows that may attend to nothing
    zero: bool = True  # every kept cell is exactly 0

    def add(self, block: torch.Tensor, kept: torch.Tensor | None = None,
            rows: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
        """Fold one block in; `kept` (same shape, bool) leaves masked cells out of the range.

        `rows`, when the caller already has each row's (min, max), saves the pass over the block.
        """
        if block.numel() == 0:
            return
        if kept is None:
            lo, hi = (rows[0].min(), rows[1].max()) if rows is not None else torch.aminmax(block)
            if math.isfinite(float(lo)) and math.isfinite(float(hi)):  # the common case: one pass
                self._range(float(lo), float(hi))
                self.zero = self.zero and float(lo) == 0 == float(hi)
                return
            kept = torch.ones_like(block, dtype=torch.bool)
        else:
            kept = kept.to(block.device).expand_as(block)
            self.masked += int((~kept).sum())
        finite = torch.isfinite(block) & kept
        if bool(finite.any()):
            values = block[finite]
            lo, hi = torch.aminmax(values)
            self._range(float(lo), float(hi))
            self.zero = self.zero and not bool((values != 0).any())
        self.nan += int((torch.isnan(block) & kept).sum())
        self.posinf += int((torch.isposinf(block) & kept).sum())
        self.neginf += int((torch.isneginf(block) & kept).sum())

    def add_row_sums(self, weights: torch.Tensor, first_row: int, empty: torch.Tensor, exact: bool = True,
                     share: torch.Tensor | None = None) -> None:
        """Weights only: how far each row that may attend somewhere is from summing to 1.

        Summed in float64 (`exact`), so the rounding of float32 weights shows; the streaming
        pass over a long input sums in the weights' own dtype, which costs no conversion.
        `share` (rows,) is what a sink took from each row: the weights then sum to 1 − share.
        """
        sums = weights.sum(dim=-1, dtype=torch.float64) if exact else weights.sum(dim=-1)
        if share is not None:
            sums = sums + share.to(sums.dtype)
        live = ~empty.to(sums.device)
        if bool(live.any()):
            self.row_deviation = worse(self.row_deviation, float((sums[live] - 1).abs().max()))
        self.empty_rows += [first_row + int(i) for i in torch.nonzero(empty).flatten().tolist()]

    def add_finite(self, lo: float, hi: float) -> None:
        """Fold in a block already known to be finite, by its min and max alone."""
        self._range(lo, hi)
        self.zero = self.zero and lo == 0 == hi

    def _range(self, lo: float, hi: float) -> None:
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)

    @property
    def finite_range(self) -> tuple[float, float]:
        """(min, max) over the finite kept cells; (0, 0) when there are none."""
        return (self.lo, self.hi) if self.lo <= self.hi else (0.0, 0.0)

    @property
    def marks(self) -> set[str]:
        """Which special cells occur: 'masked', '-inf', '+inf', 'nan' (for a legend)."""
        found = {"masked"} if self.masked else set()
        return found | {name for name, count in (("nan", self.nan), ("-inf", self.neginf), ("+inf", self.posinf))
                        if count}
