"""What every explainer shares: the Arithmetic it returns, number formatting, float64 rows, a sink's softmax row.

Explainer modules (`classic`, `modern`, …) import from here only, never from each other;
`explain.cell` builds the registry of all of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from attn_tui.i18n import _
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Stage, Trace

MAX_TERMS = 8  # terms written out before the rest are summarised as "…"


@dataclass(frozen=True)
class Arithmetic:
    """How one cell came to be: a headline, the terms written out, and their result.

    `total` is recomputed here in float64; `expected` is the stage's own cell. They
    agree up to the stage's dtype rounding, which the tests assert.
    """

    title: str
    lines: list[str] = field(default_factory=list)
    total: float = 0.0
    expected: float = 0.0
    tolerance: float = 1e-4  # relative; wider for a stage kept in float16 or bfloat16 (see `tolerance_of`)

    @property
    def matches(self) -> bool:
        if math.isinf(self.total) or math.isinf(self.expected) or math.isnan(self.expected):
            return self.total == self.expected or (math.isnan(self.total) and math.isnan(self.expected))
        return abs(self.total - self.expected) <= self.tolerance * max(1.0, abs(self.expected))


def tolerance_of(dtype: torch.dtype) -> float:
    """How far a float64 recomputation may sit from a cell stored in `dtype`: its rounding, a few units of it.

    A bfloat16 cell keeps 8 bits of mantissa; asking it to agree to 1e-4 would call
    every half-precision model's arithmetic wrong.
    """
    if not dtype.is_floating_point:
        return 1e-4
    return max(1e-4, 4 * torch.finfo(dtype).eps)


def fmt(x: float) -> str:
    if math.isinf(x):
        return "-∞" if x < 0 else "+∞"
    if math.isnan(x):
        return "NaN"
    return f"{x:.4g}"


def floats(t: torch.Tensor) -> list[float]:
    """`t`'s values as float64 Python numbers (a row of a few terms written out)."""
    return row64(t).tolist()


def row64(t: torch.Tensor) -> torch.Tensor:
    """`t` flattened to float64 on the CPU, where a cell's arithmetic is redone.

    A cell can sum a whole row (a weight's softmax, an output's Σ_k over 16k keys): torch sums it, and
    only the terms written out become Python floats, so the inspector costs a row, not a Python loop.
    """
    return t.detach().to(device="cpu", dtype=torch.float64).flatten()


def finite_max(row: torch.Tensor) -> float | None:
    """The largest finite entry of a float64 row; None when every entry is infinite (a row masked whole)."""
    finite = row[~row.isinf()]
    return float(finite.max()) if finite.numel() else None


def shifted_exps(row: torch.Tensor, top: float) -> torch.Tensor:
    """exp(x − top) for each entry of a float64 row; 0 for an infinite entry (a masked key)."""
    return torch.where(row.isinf(), 0.0, (row - top).exp())


def first_terms(terms: torch.Tensor) -> str:
    """The first MAX_TERMS numbers of a row joined by ' + ', then '…' if there are more."""
    return " + ".join(fmt(t) for t in terms[:MAX_TERMS].tolist()) + (" + …" if terms.numel() > MAX_TERMS else "")


def sum_terms(a: torch.Tensor, b: torch.Tensor, a_name: str, b_name: str) -> tuple[list[str], float]:
    """Lines for Σ a_m·b_m and the float64 sum; long sums show the first terms then '…'."""
    x, y = row64(a), row64(b)
    total = float((x * y).sum())
    shown = [f"{fmt(p)}·{fmt(q)}" for p, q in zip(x[:MAX_TERMS].tolist(), y[:MAX_TERMS].tolist())]
    more = " + … " + _("({n} more)").format(n=x.numel() - MAX_TERMS) if x.numel() > MAX_TERMS else ""
    return [f"Σ_m {a_name}[m]·{b_name}[m] =", "  " + " + ".join(shown) + more, f"  = {fmt(total)}"], total


def operand_name(trace: Trace, ref: Place | str) -> str:
    """What a formula calls an operand: a parameter's name, or the symbol of the stage it is."""
    return ref if isinstance(ref, str) else trace.stages[ref].symbol


Explained = tuple[str, list[str], float]  # the headline, the lines written out, and their float64 result
Explainer = Callable[[Trace, Stage, tuple[int, ...]], Explained]  # one per op kind: (trace, stage, index) → it


def param(trace: Trace, name: str, index: int) -> float:
    """One number of a learned parameter (a slope, a sink logit), as a float."""
    tensor = trace.params[name]
    return float(tensor.reshape(-1)[index].double())


class SinkRow(NamedTuple):
    """Row i of a softmax a sink logit joins: its exps (max-shifted), exp(s − max), the max and s."""

    exps: torch.Tensor  # (keys,) float64
    sunk: float
    top: float
    sink: float

    @property
    def denom(self) -> float:
        return float(self.exps.sum()) + self.sunk

    def exp(self, j: int) -> float:
        return float(self.exps[j])

    def opening(self, i: int, head: int) -> list[str]:
        return [_("the sink logit of head {h}: s = {s}").format(h=head, s=fmt(self.sink)),
                _("max of row {i} and s = {top}").format(i=i, top=fmt(self.top))]

    def total(self) -> str:
        return f"Σ_k = {first_terms(self.exps)}  + exp(s − max) = {fmt(self.sunk)}  → {fmt(self.denom)}"


def sink_row(source: Stage, i: int, sink: float) -> SinkRow:
    """The sink takes part in the max as well as in the sum."""
    row = row64(source.data[i])  # (keys,)
    largest = finite_max(row)
    top = sink if largest is None else max(largest, sink)
    return SinkRow(shifted_exps(row, top), math.exp(sink - top), top, sink)
