"""What every view says about a stage, whatever draws it: its kind's title and colour scale, and its notes.

The app's heatmap (`stage_view`) and the command line's table (`printed`) both read a
stage through `stage_facts`, so they cannot disagree on which stages are probabilities,
which scale colours them, or what the row-sum check says (with a sink, rows sum to
1 − p_sink).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import _
from attn_tui.present.titles import stage_title
from attn_tui.trace.catalog import ColourScale, kind_of

if TYPE_CHECKING:
    from attn_tui.trace.stage import Stage
    from attn_tui.trace.values import StageStats


@dataclass(frozen=True)
class StageFacts:
    """A stage's kind as drawn (title, symbol, colour scale) and the notes under it (its row-sum check)."""

    name: str
    title: str
    symbol: str
    colour_scale: ColourScale
    notes: tuple[str, ...] = ()

    @property
    def probability(self) -> bool:
        return self.colour_scale == "probability"


def kind_facts(name: str, notes: tuple[str, ...] = ()) -> StageFacts:
    """The facts of a stage name alone (a view built from a summary rather than a stage: the rollout)."""
    kind = kind_of(name)
    return StageFacts(name, stage_title(name), kind.symbol, kind.colour_scale, notes)


def stage_facts(stage: Stage, stats: StageStats) -> StageFacts:
    """The facts of one stage; `stats` are the ones the trace gathered for it (its row sums, for weights)."""
    notes: tuple[str, ...] = ()
    if stage.name == "weights" and stage.data.dim() == 2:  # the rows the trace summed (trace.values.stats_of)
        notes = (row_sums_note(stats.row_deviation, stats.empty_rows, sink=bool(getattr(stage.op, "sink", None))),)
    return kind_facts(stage.name, notes)


def row_sums_note(deviation: float, empty: list[int], sink: bool = False) -> str:
    """The check, with the numbers, that each row of the weights sums to 1 (or 0 when fully masked).

    With a sink the rows sum to 1 − p_sink: what the sink took is the rest. The deviation is shown as its
    nearest power of ten (±1e-07 for 6e-08 or 1.2e-07): float32 rounding lives at that scale, and how
    many of its last bits a sum loses changes with the CPU's kernels, which the note should not.
    """
    if math.isnan(deviation):
        return _("rows hold NaN: they do not sum to 1")
    scale = 10.0 ** round(math.log10(deviation)) if 0 < deviation < math.inf else deviation
    text = (_("rows sum to 1 − p_sink (±{deviation})") if sink else _("rows sum to 1 (±{deviation})")).format(
        deviation=f"{scale:.0e}")
    if empty:
        shown = ", ".join(map(str, empty[:8])) + (", … " + _("({n} rows)").format(n=len(empty)) if len(empty) > 8
                                                  else "")
        text += "; " + _("rows [{rows}] sum to 0: they may attend to nothing").format(rows=shown)
    return text
