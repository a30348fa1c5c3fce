"""Two date models on one input, side by side: where each one looks while it writes the same date.

A is the decode the user steps through, B another date model on the same input, target
and teacher forcing. A GRU's alignment is its Bahdanau (or Luong) weights; the
transformer's is the cross-attention of the chosen layer and head, or of the layer's
mean over heads. Both fill in one row per decoder step as the user passes A's steps, and
B − A shows where they differ. For every step so far the view also says whether both put
their largest weight on the same input character: year to year, month to month, or not.
Textual-free; the compare panel draws what this returns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg
from attn_tui.present.grid import Grid, GridStats, one_scale
from attn_tui.present.model_view import alignment_grid, alignment_stage, filled_rows
from attn_tui.present.stage_view import StageView, shape_line

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace


@dataclass(frozen=True)
class SideBySide:
    """A's and B's alignments as far as A's decode has got, B − A, and where their strongest inputs agree."""

    a: StageView  # A's alignment stage, its grid filled to the step on show
    b: StageView
    diff: Grid | None  # None when the two decodes wrote different numbers of characters
    a_title: str  # which model, which attention (layer and head for the transformer), in a few words
    b_title: str
    a_heading: str  # the same in full, for the inspector
    b_heading: str
    steps: int  # decoder steps both have reached
    same: tuple[int, ...]  # those steps whose largest weight falls on the same input character in A and B
    written: tuple[str, ...]  # what A wrote at each step

    @property
    def differ(self) -> tuple[int, ...]:
        return tuple(t for t in range(self.steps) if t not in self.same)

    @property
    def diff_title(self) -> str:
        if not self.steps:
            return str(Msg("B − A"))
        return str(Msg("B − A · same strongest input at {same} of {n} steps", same=len(self.same), n=self.steps))

    @property
    def message(self) -> str:
        """Why there is no B − A (empty when there is one)."""
        if self.diff is not None:
            return ""
        return str(Msg("A wrote {a} characters and B {b}: their rows do not line up, so there is no B − A",
                       a=self.a.grid.rows, b=self.b.grid.rows))

    def note(self) -> str:
        """One line for the steps so far: how many agree, and which steps (from 0, as the stage bar counts) do not."""
        if not self.steps:
            return str(Msg("no decoder step yet: step on (→) and both alignments fill in"))
        if not self.differ:
            return str(Msg("both put their largest weight on the same input character at every step so far "
                           "({n})", n=self.steps))
        where = ", ".join(f"{t} {self.written[t]!r}" for t in self.differ[:8])
        return str(Msg("same strongest input at {same} of {n} steps; they differ at step {where}",
                       same=len(self.same), n=self.steps, where=where + (" …" if len(self.differ) > 8 else "")))


def describe(trace: Trace, layer: int, head: int | None, short: bool = False) -> str:
    """A model and the attention whose alignment is drawn: `seq2seq-dates: Bahdanau attention`,
    `transformer-dates: cross-attention, layer 1, head 2`; `short` for a panel's one-line title."""
    meta = trace.meta
    name = meta.short_title
    if trace.layers == 1 and trace.heads == 1:
        kind = meta.attention_kind
        if short:
            return f"{name} · {kind}"
        what = {"additive": Msg("Bahdanau attention"), "general": Msg("Luong attention")}.get(kind, Msg("attention"))
        return f"{name}: {what!s}"
    if short:
        return str(Msg("{model} · L{layer} mean of heads", model=name, layer=layer) if head is None
                   else Msg("{model} · L{layer} H{head}", model=name, layer=layer, head=head))
    if head is None:
        return str(Msg("{model}: cross-attention, layer {layer}, mean of the heads", model=name, layer=layer))
    return str(Msg("{model}: cross-attention, layer {layer}, head {head}", model=name, layer=layer, head=head))


def alignment_view(trace: Trace, filled: int, layer: int, head: int | None) -> StageView:
    """The alignment stage (`head` None: the layer's mean) as a view whose grid shows its first `filled` rows."""
    stage = alignment_stage(trace, layer, head)
    grid = alignment_grid(trace, filled, layer, head)
    return StageView(stage.place, grid, str(stage.formula), shape_line(stage), "", ())


def strongest(grid: Grid, rows: int) -> list[int]:
    """The input column with the largest weight in each of the first `rows` rows."""
    values = grid.block(0, rows, 0, grid.cols)  # (rows, S)
    return [int(v) for v in values.argmax(-1)] if rows and grid.cols else []


def side_by_side(a: Trace, b: Trace, name: str, step: int | None, module: str | None, layer: int,
                 head: int | None, shared: bool = True) -> SideBySide:
    """A at stage `name` of decoder `step` (in `module`), and B as far: the transformer's alignment is that of
    `layer` and `head` (None: the mean over its heads), whichever side it is on; `shared`: both on one
    colour scale (else each on its own).

    B has as many rows as A has reached; when A has reached the end, B shows all of its own.
    """
    filled_a = filled_rows(a, name, step, module)
    filled_b = b.steps() if filled_a == a.steps() else min(filled_a, b.steps())
    a_view = alignment_view(a, filled_a, layer, head)
    b_view = alignment_view(b, filled_b, layer, head)
    steps = min(filled_a, filled_b)
    same = tuple(t for t, (i, j) in enumerate(zip(strongest(a_view.grid, steps), strongest(b_view.grid, steps)))
                 if i == j)
    if shared:
        a_view, b_view = _one_scale(a_view, b_view)
    diff = _diff(a_view.grid, b_view.grid, steps)
    return SideBySide(a_view, b_view, diff, describe(a, layer, head, short=True), describe(b, layer, head, short=True),
                      describe(a, layer, head), describe(b, layer, head), steps, same, a.query_tokens)


def _one_scale(a: StageView, b: StageView) -> tuple[StageView, StageView]:
    """Both alignments on one colour scale (weights: 0 to the larger of their largest weights so far), so the
    same colour is the same weight on either side."""
    a_grid, b_grid = one_scale(a.grid, b.grid)
    return replace(a, grid=a_grid), replace(b, grid=b_grid)


def _diff(a: Grid, b: Grid, filled: int) -> Grid | None:
    """B − A on A's labels, its first `filled` rows drawn, on a scale symmetric about 0."""
    if (a.rows, a.cols) != (b.rows, b.cols):
        return None
    values = b.block(0, b.rows, 0, b.cols) - a.block(0, a.rows, 0, a.cols)  # (T, S)
    reached = values[:filled]
    bound = float(abs(reached).max()) if reached.size else 0.0
    bound = bound or 1.0  # symmetric, so no difference is the scale's neutral middle
    return Grid(values, a.row_labels, a.col_labels, a.row_axis, a.col_axis, filled_rows=filled,
                stats=GridStats(-bound, bound, frozenset()), miss_rows=a.miss_rows)
