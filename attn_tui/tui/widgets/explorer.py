"""The explorer: where the user is in the trace on show, and everything drawn for that place.

It owns the position (stage, decoder step, layer, head, the energy's query, the panel
on show); the app hands it what is on show and forwards the navigation keys. Every
kind of trace goes through the same code: a layer or a decoder step is just another
axis of the trace's places.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, Label, Static

from attn_tui.core.meta import DecoderRun
from attn_tui.present.kv_sharing import kv_sharing
from attn_tui.present.model_view import alignment_so_far
from attn_tui.present.positions import Position, bar_window, positions, same_place
from attn_tui.present.stage_view import StageView, heads_grids, param_grids, place_caption, stage_view
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.kv_sharing import sharing_block
from attn_tui.render.legend import legend
from attn_tui.tui.messages import CursorMoved, PanelChanged
from attn_tui.tui.widgets.explanation import Explanation
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.heatmap import Heatmap
from attn_tui.tui.widgets.inspector import Inspector
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid
from attn_tui.tui.widgets.scroll import QuietScroll
from attn_tui.tui.widgets.stage_bar import StageBar

if TYPE_CHECKING:
    from attn_tui.core.stage import Trace
    from attn_tui.present.shown import Shown

STAGES = "heatmap"  # the panel of the stages themselves
PANEL_WIDGETS = {STAGES: "heatmap", "heads": "heads-grid", "params": "heads-grid", "model_grid": "model-grid",
                 "rollout": "rollout", "alignment": "alignment"}
FULL_WIDTH = ("model_grid",)


class Explorer(Vertical):
    """Stage bar, error line, the panel on show (heatmap, heads, params, model grid, rollout, alignment),
    legend, inspector and explanation."""

    DEFAULT_CSS = """
    Explorer #stage-bar { height: auto; max-height: 6; }
    Explorer #error { display: none; width: 100%; color: $warning; height: auto; max-height: 3; }
    Explorer #error.-shown { display: block; }
    Explorer #panels { height: 2fr; }
    Explorer #heatmap { height: 2fr; }
    Explorer #legend { height: 1; }
    Explorer.-whole #legend, Explorer.-whole #bottom { display: none; }
    Explorer.-whole #panels { height: 1fr; }
    """

    language: reactive[str] = reactive("en", init=False)

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.shown: Shown | None = None
        self.places: list[Position] = []
        self.stage_index = 0
        self.layer_index = 0
        self.head = 0
        self.energy_query = 0  # the query whose energy slice is shown
        self.panel = STAGES
        self.view: StageView | None = None

    def compose(self) -> ComposeResult:
        yield StageBar("loading torch…", id="stage-bar")
        yield Label("", id="error")
        with ContentSwitcher(initial="heatmap", id="panels"):
            yield Heatmap(id="heatmap")
            yield HeadsGrid(id="heads-grid")
            yield ModelGrid(id="model-grid")
            yield MatrixPanel(id="rollout")
            yield MatrixPanel(id="alignment")
        yield Static("", id="legend")
        with Horizontal(id="bottom"):
            with QuietScroll(id="inspector-box"):
                yield Inspector("", id="inspector")
            yield Explanation("", id="explanation")

    @property
    def trace(self) -> Trace | None:
        return None if self.shown is None else self.shown.trace

    @property
    def heatmap(self) -> Heatmap:
        return self.query_one("#heatmap", Heatmap)

    # ----- what is on show -----------------------------------------------------------------
    def show(self, shown: Shown, first_stage: str | None = None) -> None:
        """A new trace: keep the place the user was at when it still exists, else start at `first_stage`."""
        previous = self.places[self.stage_index] if self.view is not None and self.places else None
        self.shown = shown
        trace = shown.trace
        self.places = positions(trace)
        found = same_place(self.places, previous)
        if found is None:
            named = [n for n, place in enumerate(self.places) if place.name == first_stage]
            found = named[0] if named else 0
        self.stage_index = found
        self.layer_index = min(self.layer_index, trace.layers - 1)
        self.head = min(self.head, trace.heads - 1)
        fits = {"model_grid": shown.summary is not None, "rollout": shown.summary is not None,
                "alignment": isinstance(trace.meta, DecoderRun), "heads": True, "params": True, STAGES: True}
        if not fits[self.panel]:
            self.switch_panel(STAGES)
        self.render_place()

    def show_error(self, text: str) -> None:
        label = self.query_one("#error", Label)
        label.update(Text(text))
        label.set_class(bool(text), "-shown")

    def watch_language(self) -> None:
        if self.view is not None:
            self._explain()

    def render_place(self) -> None:
        """Draw the stage at the current place, and the panel on show if it is not the heatmap."""
        trace = self.trace
        if trace is None or not self.places:
            return
        place = self.places[self.stage_index]
        layer = self.layer_index if trace.layers > 1 else None
        self.view = view = stage_view(trace, place.name, layer, self.head, self.energy_query, place.step, place.module)
        window = bar_window(self.places, self.stage_index)
        self.query_one(StageBar).show(self.stage_names(), window.index(self.stage_index),
                                      view.formula, view.shape, view.note,
                                      place_caption(trace, view, self.layer_index, self.head))
        heatmap = self.heatmap
        heatmap.show(view.grid)
        self._fit_panels()
        lo, hi = view.grid.finite_range()
        masking = trace.masking(trace.stages[view.place])
        self.query_one("#legend", Static).update(legend(grid_scale(view.grid), lo, hi, view.grid.marks(),
                                                        masking.fill if masking is not None else "-inf"))
        self._explain()
        if self.panel != STAGES:
            self._draw_panel()
        self.show_cell()

    def show_cell(self) -> None:
        """The inspector: the arithmetic of the cell under the cursor."""
        from attn_tui.core.explain import explain

        view, trace = self.view, self.trace
        if view is None or trace is None:
            return
        row, col = self.heatmap.cursor
        if view.grid.row_axis in ("query", "token"):
            self.energy_query = row
        index = view.index(row, col)
        arithmetic = explain(trace, view.place, index)
        where = f"{view.name}[{', '.join(map(str, index))}]  {view.grid.row_labels[row]!r} × " \
                f"{view.grid.col_labels[col]!r}"
        self.query_one(Inspector).show(where, arithmetic)

    def on_cursor_moved(self, message: CursorMoved) -> None:
        message.stop()
        self.show_cell()

    def _explain(self) -> None:
        if self.view is not None and self.trace is not None:
            self.query_one(Explanation).show(self.view.name, self.trace.meta.explains)

    # ----- moving --------------------------------------------------------------------------
    def stage_names(self) -> list[str]:
        """The stage names the bar lists now (for a decode: the current step's, then the alignment)."""
        window = [self.places[n] for n in bar_window(self.places, self.stage_index)]
        several = len({p.module for p in window}) > 1
        return [f"{p.module}.{p.name}" if several and p.module else p.name for p in window]

    def go_to_place(self, index: int) -> None:
        if self.places:
            self.stage_index = max(0, min(index, len(self.places) - 1))
            self.render_place()

    def go_to_stage(self, index: int) -> None:
        """Jump to stage `index` of the bar (what the digits and the palette name)."""
        window = bar_window(self.places, self.stage_index)
        if window:
            self.go_to_place(window[max(0, min(index, len(window) - 1))])

    def change_head(self, step: int) -> bool:
        """Next or previous head (wrapping); False when the trace has one head."""
        trace = self.trace
        if trace is None or trace.heads == 1:
            return False
        self.head = (self.head + step) % trace.heads
        self.render_place()
        return True

    def change_layer(self, step: int) -> bool:
        """Next or previous layer (wrapping); False when the trace has one layer."""
        trace = self.trace
        if trace is None or trace.layers == 1:
            return False
        self.layer_index = (self.layer_index + step) % trace.layers
        self.render_place()
        return True

    def change_query(self, step: int) -> None:
        """Pick the query whose energy slice is shown (and move the cursor with it elsewhere)."""
        trace = self.trace
        if trace is None:
            return
        self.energy_query = max(0, min(len(trace.query_tokens) - 1, self.energy_query + step))
        if self.view is not None and self.view.grid.row_axis in ("query", "token"):
            self.heatmap.cursor = (min(self.energy_query, self.view.grid.rows - 1), self.heatmap.cursor[1])
        self.render_place()

    # ----- panels --------------------------------------------------------------------------
    def toggle_panel(self, panel: str) -> None:
        self.switch_panel(STAGES if self.panel == panel else panel)

    def switch_panel(self, panel: str) -> None:
        self.panel = panel
        self.query_one("#panels", ContentSwitcher).current = PANEL_WIDGETS[panel]
        self.set_class(panel in ("model_grid", "rollout", "alignment"), "-whole")
        self._fit_panels()
        self.post_message(PanelChanged(panel, panel in FULL_WIDTH))
        focus = {"rollout": "#rollout-map", "alignment": "#alignment-map"}.get(panel, "#" + PANEL_WIDGETS[panel])
        self.query_one(focus).focus()
        if self.trace is not None:
            self.render_place()

    def _fit_panels(self) -> None:
        """The heatmap is no taller than its matrix, so the inspector gets the rest; other panels fill."""
        switcher = self.query_one("#panels", ContentSwitcher)
        switcher.styles.max_height = self.heatmap.styles.max_height if self.panel == STAGES else None

    def grid_panel(self) -> str:
        """What g shows: a transformer's layer × head grid, a decode's alignment so far, or the heads."""
        if self.shown is not None and self.shown.summary is not None:
            return "model_grid"
        if self.trace is not None and isinstance(self.trace.meta, DecoderRun):  # flash's steps are tiles, not a decode
            return "alignment"
        return "heads"

    def _draw_panel(self) -> None:
        trace, view, shown = self.trace, self.view, self.shown
        assert trace is not None and view is not None and shown is not None
        if self.panel == "model_grid" and shown.summary is not None:
            self.query_one(ModelGrid).show(shown.summary, self.layer_index, self.head)
        elif self.panel == "rollout" and shown.summary is not None:
            from attn_tui.core.summary import ROLLOUT_FORMULA

            self.query_one("#rollout", MatrixPanel).show(
                ROLLOUT_FORMULA, shown.summary.rollout,
                "how much of each token's last-layer representation traces back to each input token, "
                "through every layer and the residual path (r returns; click a cell for its value)")
        elif self.panel == "alignment":
            place = self.places[self.stage_index]
            title, grid = alignment_so_far(trace, place.name, place.step)
            self.query_one("#alignment", MatrixPanel).show(
                title, grid, "a row fills in when its step's weights are computed; → steps on (g returns)")
        elif self.panel == "params":
            grids = param_grids(trace)
            self.query_one(HeadsGrid).show("learned parameters (seeded; p returns to the heatmap)", grids, -1,
                                           "" if grids else "this input has no learned parameters (typed Q, K, V)")
        else:
            grids, current, note = heads_grids(trace, view, self.energy_query)
            sharing = kv_sharing(trace, self.head)  # grouped-query heads: which key/value head each reads
            self.query_one(HeadsGrid).show(f"{view.name}: all heads (g returns to the heatmap)", grids, current, note,
                                           None if sharing is None else sharing_block(sharing))
