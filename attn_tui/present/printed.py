"""A trace as the command line prints it (`attn-tui stages`, `attn-tui trace`, `Trace.heatmap`): plain data.

Each stage becomes the same grids the app's heatmap draws (`stage_view.stage_slice`), with
the same facts (`stage_facts`): probability, colour scale and row-sum note cannot differ
between the terminal table and the app. Grids read their cells by blocks, so printing
the first rows of a long stage reads those rows only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import _
from attn_tui.present.grid import Grid
from attn_tui.present.model_view import offload_note
from attn_tui.present.settings_line import settings_line
from attn_tui.present.stage_facts import StageFacts, kind_facts
from attn_tui.present.stage_view import stage_slice
from attn_tui.present.step_words import printed_step
from attn_tui.present.text import printable
from attn_tui.present.titles import axis_title

if TYPE_CHECKING:
    from attn_tui.present.model_view import ModelSummary
    from attn_tui.trace.stage import Stage, Trace

MAX_SLICES = 3  # query slices printed for a 3-D stage (the energy)


@dataclass(frozen=True)
class PrintedStage:
    """One stage for the terminal: its heading, formula, facts and the grids to print (one per slice)."""

    name: str
    where: str  # " · head 1 · step 0", or ""
    shape: tuple[int, ...]
    formula: str
    facts: StageFacts
    slices: tuple[tuple[str, Grid], ...]  # (caption, grid): the caption names a 3-D stage's query
    more_slices: int = 0  # slices of a 3-D stage left out
    masked: bool = False  # some cells are hidden by the mask

    @property
    def range(self) -> tuple[float, float]:
        return self.slices[0][1].finite_range()


@dataclass(frozen=True)
class PrintedTrace:
    """The heading of a printed trace, its stages, and its warnings."""

    title: str
    details: str  # device, dtype, how many queries and keys
    settings: str  # the settings that differ from the defaults ("" when none)
    stages: tuple[PrintedStage, ...]
    warnings: tuple[str, ...]


def printed_stage(trace: Trace, stage: Stage) -> PrintedStage:
    """A stage with the grids the app would draw for it (a 3-D stage: its first MAX_SLICES queries)."""
    where = " · " + _("head {h}").format(h=stage.head) if stage.head is not None else ""
    where += " · " + printed_step(trace, stage.step, stage.place.module) if stage.step is not None else ""
    first = stage_slice(trace, stage, 0)
    slices: list[tuple[str, Grid]] = [("", first.grid)]
    more = 0
    if first.prefix:
        axis = stage.axes[0]
        count = min(stage.shape[0], MAX_SLICES)
        slices = [(printable(f"{axis_title(axis.name)} {axis.labels[i]}:"),
                   first.grid if i == 0 else stage_slice(trace, stage, i).grid) for i in range(count)]
        more = stage.shape[0] - count
    return PrintedStage(stage.name, where, tuple(stage.shape), str(stage.formula), first.facts, tuple(slices),
                        more, "masked" in first.grid.marks())


def printed_trace(trace: Trace, stages: list[Stage]) -> PrintedTrace:
    what = trace.meta.title
    layers = {s.layer for s in stages if s.layer is not None}
    heads = {s.head for s in stages if s.head is not None}
    if len(layers) == 1 and len(heads) == 1:
        what += " " + _("layer {layer} head {head}").format(layer=layers.pop(), head=heads.pop())
    details = _("device {device}  dtype {dtype}  queries {queries}  keys {keys}").format(
        device=trace.device, dtype=trace.dtype, queries=len(trace.query_tokens), keys=len(trace.key_tokens))
    offload = offload_note(getattr(trace.meta, "offloaded", ()))
    if offload:
        details += "  " + offload
    return PrintedTrace(what, details, settings_line(trace), tuple(printed_stage(trace, s) for s in stages),
                        tuple(str(w) for w in trace.warnings))


def printed_rollout(summary: ModelSummary) -> PrintedStage:
    """A transformer's rollout as a printed stage: the same grid the app's model view draws."""
    from attn_tui.trace.model_stats import ROLLOUT_FORMULA

    grid = summary.rollout
    return PrintedStage("rollout", "", (grid.rows, grid.cols), ROLLOUT_FORMULA, kind_facts("rollout"), (("", grid),))
