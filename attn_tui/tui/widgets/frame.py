"""What the explorer draws for one place, read from the trace on the app's reader thread.

The event loop never runs torch: a key changes where the user is (a `Where`), the reader reads
everything that place shows (a `Frame`: the stage's grid with the tiles in view computed, the
captions, the legend, the panel on show, the inspector's arithmetic), and the explorer draws it.
Reading may fill a lazy stage or trace a written step's layer; the frame hands back only
arrays, text and, for the panels besides the heatmap (all heads, the parameters, a model's grid,
rollout, alignment, compare), the closures that put them on screen, given the explorer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.compare import diff_grid, evicted_diff
from attn_tui.present.grid import one_scale
from attn_tui.present.kv_sharing import kv_sharing
from attn_tui.present.model_view import alignment_so_far, summary_of
from attn_tui.present.positions import Position, whose_cell
from attn_tui.present.settings_line import settings_line
from attn_tui.present.stage_view import HeadsPanel, StageView, heads_panel, param_grids, place_caption, stage_view
from attn_tui.present.titles import stage_title
from attn_tui.render.kv_sharing import sharing_block
from attn_tui.tui.widgets.compare_view import CompareView
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid

if TYPE_CHECKING:
    from attn_tui.explain.common import Arithmetic
    from attn_tui.present.compare import Comparison
    from attn_tui.present.date_compare import SideBySide
    from attn_tui.present.grid import Grid
    from attn_tui.trace.shown import Shown
    from attn_tui.trace.stage import Trace

AROUND_ROWS, AROUND_COLS = 64, 256  # the cells around the cursor a frame computes before it is drawn


@dataclass(frozen=True, repr=False)  # its repr would print the trace's tensors
class Where:
    """Where the user is when the explorer asks for a frame: a frozen copy of the app state's `Whereabouts` (the
    reader may read it while the user moves on)."""

    shown: Shown
    places: tuple[Position, ...]
    stage_index: int
    layer_index: int
    head: int
    energy_query: int
    panel: str
    shared_scale: bool
    value_weighted: bool
    cursor: tuple[int, int]
    comparison: Comparison | None = None
    shown_b: Shown | None = None
    b_layer: int = 0
    b_head: int = 0

    @property
    def trace(self) -> Trace:
        return self.shown.trace

    def transformer_place(self) -> tuple[int, int | None]:
        """Two date models side by side: the layer and head (None: the mean of the heads) of the transformer's
        alignment, A's own when A has them, else B's."""
        place = self.places[self.stage_index] if self.places else None
        mean = (self.comparison is not None and self.comparison.mean_heads) or (
            place is not None and place.name == "alignment_mean")
        own = self.trace.layers > 1 or self.trace.heads > 1
        layer, head = (self.layer_index, self.head) if own else (self.b_layer, self.b_head)
        return layer, None if mean else head


Draw = Callable[[Any], None]  # puts what a panel read on screen, given the explorer (nothing there computes)


@dataclass(frozen=True)
class Cell:
    """The inspector's lines for the cell under the cursor (A's and B's when comparing)."""

    view: StageView  # the view it was read for: a cell read for a view no longer on show is dropped
    where: str
    arithmetic: Arithmetic
    other: tuple[str, str, Arithmetic] | None
    origin: str
    whose: str


@dataclass(frozen=True, repr=False)
class Frame:
    """Everything drawn for a place, read once."""

    where: Where
    stage_index: int  # the place drawn (a layer without the asked stage shows its step's first one)
    view: StageView
    caption: str
    origin: str
    settings: str
    fill: str  # how the masked cells were filled (the legend's words)
    mask_note: str
    explains: tuple[str, ...]  # the explanation pane's extra notes
    panel: Draw | None  # the panel on show besides the heatmap (compare included)
    view_b: StageView | None
    pair: SideBySide | None
    cell: Cell  # the cursor's cell, read with the frame


def load_around(grid: Grid, cursor: tuple[int, int]) -> None:
    """Compute the cells around the cursor (the heatmap keeps the cursor in view), so the first drawing of a
    frame finds what it shows at hand; what a later scroll shows is read when it is asked for."""
    row, col = min(cursor[0], grid.rows - 1), min(cursor[1], grid.cols - 1)
    grid.load(max(0, row - AROUND_ROWS), min(grid.rows, row + AROUND_ROWS), max(0, col - AROUND_COLS),
              min(grid.cols, col + AROUND_COLS))


def _place(where: Where) -> tuple[int, Position]:
    """The place to draw: the one asked, or, on a layer without that stage (a linear-attention layer has no
    scores), the step's first stage the layer has."""
    trace, index = where.trace, where.stage_index
    place = where.places[index]
    layer = where.layer_index if trace.layers > 1 else None
    if layer is not None and trace.find(place.name, layer, None, place.step, place.module) is None:
        here = [n for n, p in enumerate(where.places)
                if p.step == place.step and trace.find(p.name, layer, None, p.step, p.module) is not None]
        if here:
            index = here[0]
    return index, where.places[index]


def read_frame(where: Where) -> Frame:
    """The frame of `where` (on the reader thread: this is where the trace is read)."""
    trace = where.trace
    index, place = _place(where)
    layer = where.layer_index if trace.layers > 1 else None
    view = stage_view(trace, place.name, layer, where.head, where.energy_query, place.step, place.module)
    stage = trace.stages[view.place]
    masking = trace.masking(stage)
    spec = getattr(masking, "mask", None)
    given = getattr(spec, "given_as", lambda: "")()  # a mask typed another way
    load_around(view.grid, where.cursor)
    panel, view_b, pair = None, None, None
    if where.panel == "compare":
        panel, view_b, pair = read_compare(where, view)
    elif where.panel != "heatmap":
        panel = read_panel(where, view)
    return Frame(where, index, view, place_caption(trace, view, where.layer_index, where.head), stage.origin or "",
                 settings_line(trace), masking.fill if masking is not None else "-inf",
                 "" if spec is None else spec.legend_note(), ((given,) if given else ()) + trace.meta.explains,
                 panel, view_b, pair, read_cell(where, view, view_b, pair))


def read_cell(where: Where, view: StageView, view_b: StageView | None, pair: SideBySide | None) -> Cell:
    """The arithmetic of the cell under the cursor of `view` (and of B's view when comparing), recomputed from the
    trace's own tensors (on the reader thread)."""
    from attn_tui.explain.cell import explain

    trace = where.trace
    shown_view = pair.a if where.panel == "compare" and pair is not None else view  # two models: A's alignment
    row, col = min(where.cursor[0], shown_view.grid.rows - 1), min(where.cursor[1], shown_view.grid.cols - 1)
    index = shown_view.index(row, col)
    arithmetic = explain(trace, shown_view.place, index)
    said = f"{shown_view.name}[{', '.join(map(str, index))}]  {shown_view.grid.row_labels[row]!r} × " \
           f"{shown_view.grid.col_labels[col]!r}"
    other = None
    comparison = where.comparison
    if where.panel == "compare" and comparison is not None and view_b is not None:
        b_trace = trace if where.shown_b is None else where.shown_b.trace
        a_label, b_label = ((pair.a_heading, pair.b_heading) if pair is not None
                            else (comparison.a_label, comparison.b_label))
        if row < view_b.grid.rows and col < view_b.grid.cols:
            other = (f"A: {a_label}", f"B: {b_label}", explain(b_trace, view_b.place, view_b.index(row, col)))
    return Cell(view, said, arithmetic, other, trace.stages[shown_view.place].origin or "",
                whose_cell(trace, shown_view.place))


def read_panel(where: Where, view: StageView) -> Draw:
    """The panel on show other than the stage's own heatmap and compare."""
    trace, panel = where.trace, where.panel
    summary = summary_of(where.shown)
    if panel == "model_grid" and summary is not None:
        layer, head = where.layer_index, where.head
        return lambda explorer: explorer.query_one(ModelGrid).show(summary, layer, head)
    if panel == "rollout" and summary is not None:
        from attn_tui.trace.model_stats import ROLLOUT_FORMULA, ROLLOUT_MOVED_FORMULA

        weighted = where.value_weighted and summary.rollout_moved is not None
        title = (_("value-weighted rollout") + " · " + ROLLOUT_MOVED_FORMULA) if weighted \
            else (_("attention rollout") + " · " + ROLLOUT_FORMULA)
        back = _("r returns") if weighted or summary.rollout_moved is None else _("r: the value-weighted rollout")
        grid = summary.rollout_moved if weighted and summary.rollout_moved is not None else summary.rollout
        note = _("how much of each token's last-layer representation traces back to each input token, through "
                 "every layer and the residual path ({back}; click a cell for its value)").format(back=back)
        return lambda explorer: explorer.query_one("#rollout", MatrixPanel).show(title, grid, note)
    if panel == "alignment":
        place = where.places[where.stage_index]
        of_head = None if place.name == "alignment_mean" else where.head  # a mean over heads, or the head's
        said, aligned = alignment_so_far(trace, place.name, place.step, where.layer_index, of_head, place.module)
        hint = _("a row fills in when its step's weights are computed; → steps on (g returns)")
        return lambda explorer: explorer.query_one("#alignment", MatrixPanel).show(said, aligned, hint)
    if panel == "params":
        grids = param_grids(trace)
        params = HeadsPanel(grids, -1, "" if grids else _("this input has no learned parameters (typed Q, K, V)"),
                            None, False)
        said = _("learned parameters (seeded; p returns to the heatmap)")
        return lambda explorer: explorer.query_one(HeadsGrid).show(said, params)
    sharing = kv_sharing(trace, where.head)  # grouped-query heads: which key/value head each one reads
    heads = heads_panel(trace, view, where.energy_query, where.shared_scale)
    title = _("{stage}: all heads (g returns to the heatmap)").format(stage=stage_title(view.name))
    block = None if sharing is None else sharing_block(sharing)
    return lambda explorer: explorer.query_one(HeadsGrid).show(title, heads, block)


def written_text(trace: Trace) -> str:
    """`: "…the text a model wrote"` after a compare side's title, where its trace is a writing; else ""."""
    output = getattr(trace.meta, "output", None)
    if not isinstance(output, str) or not getattr(trace.meta, "generated_ids", ()):
        return ""
    flat = " ".join(output.split())
    return f": “{'…' + flat[-40:] if len(flat) > 40 else flat}”"


def read_compare(where: Where, view: StageView) -> tuple[Draw, StageView | None, SideBySide | None]:
    """A, B and B − A for the stage at the current place; B's view (None when B lacks the stage), and the two
    date models' side-by-side pair when that is what is compared."""
    comparison, trace = where.comparison, where.trace
    assert comparison is not None
    if comparison.models and where.shown_b is not None:
        return read_models(where, view)
    b_trace = trace if where.shown_b is None else where.shown_b.trace
    place = view.place
    head = comparison.head if comparison.head is not None else where.head
    layer = comparison.layer if comparison.layer is not None else place.layer
    if where.shown_b is not None and comparison.key == "other":  # another model: its last layer and head at most
        layer = min(layer or 0, b_trace.layers - 1) if b_trace.layers > 1 else None
        head = min(head, b_trace.heads - 1)
    b_view: StageView | None = None
    message = ""
    name = comparison.b_name(place.name)  # gate off: A's gated beside B's output
    if b_trace.find(name, layer, head if b_trace.heads > 1 else None, place.step, place.module) is None:
        message = _("B has no stage {stage}").format(stage=stage_title(place.name))
    else:
        b_view = stage_view(b_trace, name, layer, head, where.energy_query, place.step, place.module)
    diff = None if b_view is None else diff_grid(view.grid, b_view.grid)
    if diff is None and b_view is not None and comparison.key == "cache":  # StreamingLLM evicted keys here
        diff = evicted_diff(view.grid, b_view.grid, getattr(trace.meta, "cache", ""),
                            getattr(b_trace.meta, "cache", ""))
    a_grid, b_grid = view.grid, None if b_view is None else b_view.grid
    if b_grid is not None and where.shared_scale:
        a_grid, b_grid = one_scale(a_grid, b_grid)
    for grid in (a_grid, b_grid, diff):
        if grid is not None:
            load_around(grid, where.cursor)
    grids = {"a": a_grid, "b": b_grid, "diff": diff}
    titles: dict[str, Text | str] = {"a": Text.assemble(("A  ", "bold yellow"), str(comparison.a_label),
                                                        written_text(trace)),
              "b": Text.assemble(("B  ", "bold magenta"), str(comparison.b_label), written_text(b_trace)),
              "diff": Text(_("B − A"), style="bold")}
    messages = {"b": message, "diff": message or _("A and B have different shapes here")}
    shared = where.shared_scale
    return (lambda explorer: explorer.query_one(CompareView).show(titles, grids, messages, shared=shared)), b_view, \
        None


def read_models(where: Where, view: StageView) -> tuple[Draw, StageView, SideBySide]:
    """Two date models side by side: each one's alignment as far as A's decode has got, and B − A."""
    from attn_tui.present.date_compare import side_by_side

    assert where.shown_b is not None
    layer, head = where.transformer_place()
    place = view.place
    pair = side_by_side(where.trace, where.shown_b.trace, place.name, place.step, place.module, layer, head,
                        where.shared_scale)
    titles: dict[str, Text | str] = {"a": Text.assemble(("A  ", "bold yellow"), pair.a_title),
                                     "b": Text.assemble(("B  ", "bold magenta"), pair.b_title),
                                     "diff": Text(pair.diff_title, style="bold")}
    note, shared = pair.note(), where.shared_scale
    return (lambda explorer: explorer.query_one(CompareView).show(
        titles, {"a": pair.a.grid, "b": pair.b.grid, "diff": pair.diff}, {"diff": pair.message}, note,
        shared=shared)), pair.b, pair
