"""Drawing the explorer's other panels: all heads, the parameters, a model's grid, rollout, alignment, compare.

Functions of the explorer's state, kept apart so the explorer itself stays about where
the user is; each reads the trace through present/ and hands a widget what to draw.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, TypeVar, overload

from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.compare import diff_grid, evicted_diff
from attn_tui.present.grid import one_scale
from attn_tui.present.kv_sharing import kv_sharing
from attn_tui.present.model_view import alignment_so_far, summary_of
from attn_tui.present.stage_view import StageView, heads_panel, param_grids, stage_view
from attn_tui.present.titles import stage_title
from attn_tui.render.kv_sharing import sharing_block
from attn_tui.tui.widgets.compare_view import CompareView
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid

if TYPE_CHECKING:
    from textual.widget import Widget

    from attn_tui.present.compare import Comparison
    from attn_tui.present.date_compare import SideBySide
    from attn_tui.present.positions import Position
    from attn_tui.trace.shown import Shown
    from attn_tui.trace.stage import Trace

W = TypeVar("W", bound="Widget")


class PanelHost(Protocol):
    """What the panels read off the explorer (where the user is) and the widgets they fill: declared here, so
    the panels do not import the Explorer that imports them (Explorer provides every one)."""

    shown: Shown | None
    shown_b: Shown | None
    places: list[Position]
    stage_index: int
    layer_index: int
    head: int
    energy_query: int
    panel: str
    shared_scale: bool
    value_weighted: bool
    comparison: Comparison | None
    pair: SideBySide | None

    @property
    def trace(self) -> Trace | None: ...

    def transformer_place(self) -> tuple[int, int | None]: ...

    @overload
    def query_one(self, selector: type[W]) -> W: ...

    @overload
    def query_one(self, selector: str, expect_type: type[W]) -> W: ...


def draw_panel(explorer: PanelHost, view: StageView) -> None:
    """The panel on show other than the stage's own heatmap and compare."""
    trace, shown, panel = explorer.trace, explorer.shown, explorer.panel
    assert trace is not None and shown is not None
    summary = summary_of(shown)
    if panel == "model_grid" and summary is not None:
        explorer.query_one(ModelGrid).show(summary, explorer.layer_index, explorer.head)
    elif panel == "rollout" and summary is not None:
        from attn_tui.trace.model_stats import ROLLOUT_FORMULA, ROLLOUT_MOVED_FORMULA

        weighted = explorer.value_weighted and summary.rollout_moved is not None
        title = (_("value-weighted rollout") + " · " + ROLLOUT_MOVED_FORMULA) if weighted \
            else (_("attention rollout") + " · " + ROLLOUT_FORMULA)
        back = _("r returns") if weighted or summary.rollout_moved is None else _("r: the value-weighted rollout")
        explorer.query_one("#rollout", MatrixPanel).show(
            title, summary.rollout_moved if weighted and summary.rollout_moved is not None else summary.rollout,
            _("how much of each token's last-layer representation traces back to each input token, through every "
              "layer and the residual path ({back}; click a cell for its value)").format(back=back))
    elif panel == "alignment":
        place = explorer.places[explorer.stage_index]
        head = None if place.name == "alignment_mean" else explorer.head  # a mean over heads, or the head's
        title, grid = alignment_so_far(trace, place.name, place.step, explorer.layer_index, head, place.module)
        explorer.query_one("#alignment", MatrixPanel).show(
            title, grid, _("a row fills in when its step's weights are computed; → steps on (g returns)"))
    elif panel == "params":
        grids = param_grids(trace)
        from attn_tui.present.stage_view import HeadsPanel

        explorer.query_one(HeadsGrid).show(
            _("learned parameters (seeded; p returns to the heatmap)"),
            HeadsPanel(grids, -1, "" if grids else _("this input has no learned parameters (typed Q, K, V)"), None,
                       False))
    else:
        sharing = kv_sharing(trace, explorer.head)  # grouped-query heads: which key/value head each one reads
        explorer.query_one(HeadsGrid).show(
            _("{stage}: all heads (g returns to the heatmap)").format(stage=stage_title(view.name)),
            heads_panel(trace, view, explorer.energy_query, explorer.shared_scale),
            None if sharing is None else sharing_block(sharing))


def written_text(trace: Trace) -> str:
    """`: "…the text a model wrote"` after a compare side's title, where its trace is a writing; else ""."""
    output = getattr(trace.meta, "output", None)
    if not isinstance(output, str) or not getattr(trace.meta, "generated_ids", ()):
        return ""
    flat = " ".join(output.split())
    return f": “{'…' + flat[-40:] if len(flat) > 40 else flat}”"


def draw_compare(explorer: PanelHost, view: StageView) -> StageView | None:
    """A, B and B − A for the stage at the current place; B's view (None when B lacks the stage)."""
    comparison, trace = explorer.comparison, explorer.trace
    assert comparison is not None and trace is not None
    explorer.pair = None
    if comparison.models and explorer.shown_b is not None:
        return draw_models(explorer, view)
    b_trace = trace if explorer.shown_b is None else explorer.shown_b.trace
    place = view.place
    head = comparison.head if comparison.head is not None else explorer.head
    layer = comparison.layer if comparison.layer is not None else place.layer
    if explorer.shown_b is not None and comparison.key == "other":  # another model: its last layer and head at most
        layer = min(layer or 0, b_trace.layers - 1) if b_trace.layers > 1 else None
        head = min(head, b_trace.heads - 1)
    b_view: StageView | None = None
    message = ""
    name = comparison.b_name(place.name)  # gate off: A's gated beside B's output
    if b_trace.find(name, layer, head if b_trace.heads > 1 else None, place.step, place.module) is None:
        message = _("B has no stage {stage}").format(stage=stage_title(place.name))
    else:
        b_view = stage_view(b_trace, name, layer, head, explorer.energy_query, place.step, place.module)
    diff = None if b_view is None else diff_grid(view.grid, b_view.grid)
    if diff is None and b_view is not None and comparison.key == "cache":  # StreamingLLM evicted keys here
        diff = evicted_diff(view.grid, b_view.grid, getattr(trace.meta, "cache", ""),
                            getattr(b_trace.meta, "cache", ""))
    a_grid, b_grid = view.grid, None if b_view is None else b_view.grid
    if b_grid is not None and explorer.shared_scale:
        a_grid, b_grid = one_scale(a_grid, b_grid)
    grids = {"a": a_grid, "b": b_grid, "diff": diff}
    titles: dict[str, Text | str] = {"a": Text.assemble(("A  ", "bold yellow"), str(comparison.a_label),
                                                        written_text(trace)),
              "b": Text.assemble(("B  ", "bold magenta"), str(comparison.b_label), written_text(b_trace)),
              "diff": Text(_("B − A"), style="bold")}
    messages = {"b": message, "diff": message or _("A and B have different shapes here")}
    explorer.query_one(CompareView).show(titles, grids, messages, shared=explorer.shared_scale)
    return b_view


def draw_models(explorer: PanelHost, view: StageView) -> StageView:
    """Two date models side by side: each one's alignment as far as A's decode has got, and B − A."""
    from attn_tui.present.date_compare import side_by_side

    comparison, a, shown_b = explorer.comparison, explorer.trace, explorer.shown_b
    assert comparison is not None and a is not None and shown_b is not None
    layer, head = explorer.transformer_place()
    place = view.place
    pair = explorer.pair = side_by_side(a, shown_b.trace, place.name, place.step, place.module, layer, head,
                                        explorer.shared_scale)
    titles: dict[str, Text | str] = {"a": Text.assemble(("A  ", "bold yellow"), pair.a_title),
                                     "b": Text.assemble(("B  ", "bold magenta"), pair.b_title),
                                     "diff": Text(pair.diff_title, style="bold")}
    explorer.query_one(CompareView).show(titles, {"a": pair.a.grid, "b": pair.b.grid, "diff": pair.diff},
                                         {"diff": pair.message}, pair.note(), shared=explorer.shared_scale)
    return pair.b
