"""The explorer: where the user is in the trace on show, and everything drawn for that place.

Where the user is (stage, decoder step, layer, head, the energy's query, the panel on
show) is the app state's `Whereabouts`, which it reads and writes through attributes of
the same names; the app hands it what is on show and forwards the navigation keys. Every
kind of trace goes through the same code: a layer or a decoder step is just another
axis of the trace's places. In compare mode it also holds B (the same ask with one
setting changed) and draws A, B and B − A with one cursor.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import ContentSwitcher, Label, Static

from attn_tui.i18n import N_, _
from attn_tui.present.model_view import aligned
from attn_tui.present.positions import Position, bar_window, positions
from attn_tui.present.stage_view import StageView
from attn_tui.present.titles import stage_title
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.legend import legend
from attn_tui.tui.messages import PanelChanged
from attn_tui.tui.reader import CELL, CELLS, FRAME, Reader
from attn_tui.tui.whereabouts import STAGES, OnWhereabouts, Whereabouts
from attn_tui.tui.widgets.compare_view import CompareView
from attn_tui.tui.widgets.echo import shown as drawn
from attn_tui.tui.widgets.explanation import Explanation
from attn_tui.tui.widgets.frame import Cell, Frame, Where, read_cell, read_frame
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.heatmap import Heatmap
from attn_tui.tui.widgets.inspector import Inspector
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid
from attn_tui.tui.widgets.scroll import QuietScroll
from attn_tui.tui.widgets.stage_bar import StageBar

if TYPE_CHECKING:
    from attn_tui.present.compare import Comparison
    from attn_tui.present.date_compare import SideBySide
    from attn_tui.trace.shown import Shown
    from attn_tui.trace.stage import Trace

PANEL_WIDGETS = {STAGES: "heatmap", "heads": "heads-grid", "params": "heads-grid", "model_grid": "model-grid",
                 "rollout": "rollout", "alignment": "alignment", "compare": "compare"}
FULL_WIDTH = ("model_grid", "compare")
DIGITS = 10  # the keys 1…9, 0 reach the bar's first ten stages; `/` (the stage picker) reaches every place
WHOLE = ("model_grid", "rollout", "alignment")  # panels that take the inspector's room too
# What the stage bar says over a panel of the whole model, in place of the stage's formula (which it does not show).
WHOLE_MODEL = {"model_grid": N_("every head of every layer, not one stage: g returns to the stages"),
               "rollout": N_("a rollout through every layer, not one stage: its title is below")}


class Explorer(Vertical):
    """Stage bar, error line, the panel on show (heatmap, heads, params, model grid, rollout, alignment,
    compare), legend, inspector and explanation."""

    DEFAULT_CSS = """
    Explorer #stage-bar { height: auto; max-height: 45%; }  /* a long caption wraps whole; only a huge bar stops */
    Explorer #error { display: none; width: 100%; color: $warning; height: auto; max-height: 3; }
    Explorer #error.-shown { display: block; }
    Explorer #panels { height: 2fr; }
    Explorer #heatmap { height: 2fr; }
    Explorer #legend { height: auto; }  /* a legend wider than the screen wraps to a second line, never cut */
    Explorer.-whole #legend, Explorer.-whole #bottom { display: none; }
    Explorer.-whole #panels { height: 1fr; }
    Explorer.-comparing #legend { display: none; }
    """

    language: reactive[str] = reactive("en", init=False)

    # where the user is: the whereabouts' own attributes (see Whereabouts for what each one is)
    places: OnWhereabouts[tuple[Position, ...]] = OnWhereabouts()
    stage_index: OnWhereabouts[int] = OnWhereabouts()
    layer_index: OnWhereabouts[int] = OnWhereabouts()
    head: OnWhereabouts[int] = OnWhereabouts()
    panel: OnWhereabouts[str] = OnWhereabouts()
    value_weighted: OnWhereabouts[bool] = OnWhereabouts()
    b_layer: OnWhereabouts[int] = OnWhereabouts()
    b_head: OnWhereabouts[int] = OnWhereabouts()

    def __init__(self, whereabouts: Whereabouts | None = None, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.whereabouts = whereabouts or Whereabouts()  # the app's state holds it
        self.shown: Shown | None = None
        self.view: StageView | None = None
        self.comparison: Comparison | None = None
        self.shown_b: Shown | None = None  # B's computation (a head comparison reads A's trace)
        self.view_b: StageView | None = None
        self.pair: SideBySide | None = None  # two date models side by side: what the compare panel shows
        self.reader = Reader()  # every read of a trace for the screen runs there, never on the event loop
        self.lesson = ""  # the words of the sample on show (msgid): what of its note carries over
        self.place_forgotten = False  # the next trace opens at its asked or first stage, wherever a frame put us

    def on_unmount(self) -> None:
        self.reader.close()

    def compose(self) -> ComposeResult:
        yield StageBar(_("loading torch…"), id="stage-bar")
        yield Label("", id="error")
        with ContentSwitcher(initial="heatmap", id="panels"):
            yield Heatmap(id="heatmap")
            yield HeadsGrid(id="heads-grid")
            yield ModelGrid(id="model-grid")
            yield MatrixPanel(id="rollout")
            yield MatrixPanel(id="alignment")
            yield CompareView(id="compare")
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
        """The heatmap the cursor lives in: the stage's own, or A's when comparing."""
        if self.panel == "compare":
            return self.query_one(CompareView).heatmap("a")
        return self.query_one("#heatmap", Heatmap)

    @property
    def cursor(self) -> tuple[int, int]:
        """The cell under the cursor: the heatmap's own reactive is its truth."""
        return self.heatmap.cursor

    # ----- what is on show -----------------------------------------------------------------
    def show(self, shown: Shown, first_stage: str | None = None) -> None:
        """A new trace: keep the place the user was at when it still exists, else start at `first_stage`.

        A decode still being made comes here once per step, each time with the steps so far: the place is kept
        and the step selector (the places) extends."""
        self.shown = shown
        trace = shown.trace
        self.whereabouts.settle_on(tuple(positions(trace)), first_stage,
                                   keep=self.view is not None and not self.place_forgotten)
        self.place_forgotten = False
        self.whereabouts.fit(trace.layers, trace.heads_at)  # a layer may have its own count of heads
        fits = {"model_grid": shown.stats is not None, "rollout": shown.stats is not None,
                "alignment": aligned(trace), "heads": True, "params": True, STAGES: True,
                "compare": self.comparison is not None}
        if not fits[self.panel]:
            self.switch_panel(STAGES)
        self.render_place()

    def forget_place(self) -> None:
        """The next trace opens at its first stage (or the one asked for), not where the user was: until the user
        moves, however many frames of a growing trace are drawn meanwhile."""
        self.view, self.place_forgotten = None, True

    def show_b(self, comparison: Comparison, shown_b: Shown | None) -> None:
        """Compare with B: `shown_b` is B's computation (None: a head comparison, read from A's trace)."""
        if comparison is not self.comparison and shown_b is not None:
            self.b_layer, self.b_head = shown_b.trace.layers - 1, 0  # another model's last layer reads the input most
        self.comparison, self.shown_b = comparison, shown_b
        if self.panel != "compare":
            self.switch_panel("compare")
        else:
            self.render_place()

    def end_compare(self) -> None:
        self.comparison, self.shown_b, self.view_b, self.pair = None, None, None, None
        if self.panel == "compare":
            self.switch_panel(STAGES)

    def waiting(self, text: str) -> None:
        """Before the first trace: what the app is doing now (loading torch, opening a model and its phase,
        computing), in the stage bar and the heatmap's place."""
        if self.shown is None:
            self.query_one(StageBar).update(drawn(text))
            self.query_one("#heatmap", Heatmap).clear(text)

    def show_error(self, text: str) -> None:
        label = self.query_one("#error", Label)
        label.update(drawn(text))  # a warning may quote a token or a row name
        label.set_class(bool(text), "-shown")

    def watch_language(self) -> None:
        self.query_one(HeadsGrid).refresh()
        if self.view is not None:
            self.render_place()

    def render_place(self) -> None:
        """Ask for the frame of the current place: the reader reads it (the trace is never read on the event
        loop), and it is drawn when it arrives, unless a newer ask came first."""
        where = self.where()
        if where is not None:
            self._read_frame(where)

    async def drawn(self) -> None:
        """Wait until the frame asked for last is on screen: a key that acts on what is on show (x, export) acts
        on the place the user moved to, however long it took to read."""
        for worker in [w for w in self.app.workers if w.node is self and w.group == FRAME]:
            await worker.wait()

    def where(self) -> Where | None:
        """Where the user is, as plain values the reader can read while the user moves on."""
        shown, here = self.shown, self.whereabouts
        if shown is None or not here.places:
            return None
        here.cursor = self.heatmap.cursor  # the heatmap's is the truth: a move whose message is on its way counts
        return Where(shown, here.places, here.stage_index, here.layer_index, here.head, here.energy_query,
                     here.panel, here.shared_scale, here.value_weighted, here.cursor, self.comparison,
                     self.shown_b, here.b_layer, here.b_head)

    @work(group=FRAME, exclusive=True, description=FRAME)  # not repr(where): a trace's repr prints its tensors
    async def _read_frame(self, where: Where) -> None:
        frame = await self.reader.read(read_frame, where)
        if self.app.is_running and self.is_attached:  # else the app closed while it was read
            self.draw(frame)

    def draw(self, frame: Frame) -> None:
        """Put a frame on screen: the stage bar, the heatmap, the legend, the panel on show and the inspector."""
        trace, view = frame.where.trace, frame.view
        self.stage_index, self.view, self.view_b, self.pair = frame.stage_index, view, frame.view_b, frame.pair
        window = bar_window(self.places, self.stage_index)
        whole_model = WHOLE_MODEL.get(self.panel)
        formula, shape, note = (_(whole_model), "", "") if whole_model else (view.formula, view.shape, view.note)
        self.query_one(StageBar).show(self.stage_titles(compact=True), window.index(self.stage_index), formula,
                                      shape, note, frame.caption, frame.origin, frame.settings,
                                      more=len(self.places) > min(len(window), DIGITS),
                                      lesson=_(self.lesson) if self.lesson else "")
        if self.panel != "compare":
            self.query_one("#heatmap", Heatmap).show(view.grid)
        self._fit_panels()
        lo, hi = view.grid.finite_range()
        self.query_one("#legend", Static).update(legend(grid_scale(view.grid), lo, hi, view.grid.marks(), frame.fill,
                                                        frame.mask_note))
        self.query_one(Explanation).show(view.name, frame.explains)
        if frame.panel is not None:
            frame.panel(self)
            if self.panel == "compare":
                self._fit_panels()
        self._draw_cell(frame.cell)
        if self.heatmap.cursor != frame.where.cursor or trace is not self.trace:
            self.show_cell()  # the cursor moved while the frame was read: its cell is read again

    def show_cell(self) -> None:
        """The inspector: the arithmetic of the cell under the cursor (A's and B's when comparing), read by the
        reader and drawn when it arrives."""
        where, view = self.where(), self.view
        if where is not None and view is not None:
            self._read_cell(where, view, self.view_b, self.pair)

    @work(group=CELL, exclusive=True, description=CELL)
    async def _read_cell(self, where: Where, view: StageView, view_b: StageView | None,
                         pair: SideBySide | None) -> None:
        cell = await self.reader.read(read_cell, where, view, view_b, pair)
        if cell.view is self.view and self.app.is_running:  # else a newer frame came first, with its own cell
            self._draw_cell(cell)

    def _draw_cell(self, cell: Cell) -> None:
        view = self.pair.a if self.panel == "compare" and self.pair is not None else cell.view
        row = min(self.heatmap.cursor[0], view.grid.rows - 1)
        if view.grid.row_axis in ("query", "token"):
            self.whereabouts.energy_query = row
        self.query_one(Inspector).show(cell.where, cell.arithmetic, cell.other, cell.origin, cell.whose)

    def on_heatmap_cells_wanted(self, message: Heatmap.CellsWanted) -> None:
        """A scroll brought cells into view that are not computed yet: read them, then draw them."""
        message.stop()
        self._read_cells(message)

    @work(group=CELLS, description=CELLS)
    async def _read_cells(self, message: Heatmap.CellsWanted) -> None:
        await self.reader.read(message.grid.load, *message.region)
        message.heatmap.cells_arrived(message.grid)

    def on_resize(self) -> None:
        """A new width may wrap compare's titles to another number of lines."""
        if self.panel == "compare":
            self._fit_panels()

    def on_heatmap_height_changed(self, message: Heatmap.HeightChanged) -> None:
        """A heatmap laid out again for its real width (compare's three, once placed) may need fewer lines."""
        message.stop()
        self._fit_panels()

    def on_heatmap_cursor_moved(self, message: Heatmap.CursorMoved) -> None:
        message.stop()
        if message.heatmap is self.heatmap:
            scroll = message.heatmap.scroll_offset
            self.whereabouts.cursor, self.whereabouts.scroll = (message.row, message.col), (scroll.x, scroll.y)
            self.show_cell()

    # ----- moving --------------------------------------------------------------------------
    def stage_names(self) -> list[str]:
        """The stage names the bar lists now (for a decode: the current step's, then the alignment)."""
        window = [self.places[n] for n in bar_window(self.places, self.stage_index)]
        several = len({p.module for p in window}) > 1
        return [f"{p.module}.{p.name}" if several and p.module else p.name for p in window]

    def stage_titles(self, compact: bool = False) -> list[str]:
        """The bar's names in the language on show; `compact`: a module named once, where its stages begin
        (a transformer decode lists three modules' stages, which would fill the bar)."""
        window = [self.places[n] for n in bar_window(self.places, self.stage_index)]
        several = len({p.module for p in window}) > 1
        if compact and several:
            return [f"{p.module}: {stage_title(p.name)}" if p.module and (n == 0 or window[n - 1].module != p.module)
                    else stage_title(p.name) for n, p in enumerate(window)]
        return [f"{p.module}.{stage_title(p.name)}" if several and p.module else stage_title(p.name) for p in window]

    def go_to_place(self, index: int) -> None:
        self.place_forgotten = False  # the user chose where to be
        if self.whereabouts.go_to_place(index):
            self.render_place()

    def go_to_stage(self, index: int) -> None:
        """Jump to stage `index` of the bar (what the digits, clicks and the palette name)."""
        window = bar_window(self.places, self.stage_index)
        if window:
            self.go_to_place(window[max(0, min(index, len(window) - 1))])

    def _b_layered(self) -> Trace | None:
        """Two date models side by side where A has one attention and B layers of heads: the keys move B's."""
        trace, shown_b = self.trace, self.shown_b
        if self.comparison is None or not self.comparison.models or shown_b is None or trace is None:
            return None
        b = shown_b.trace
        return b if trace.layers == trace.heads == 1 and (b.layers > 1 or b.heads > 1) else None

    def change_head(self, step: int) -> bool:
        """Next or previous head (wrapping); False when the trace has one head."""
        trace, b = self.trace, self._b_layered()
        if b is not None:
            self.whereabouts.step_b(0, step, b.layers, b.heads)
        elif trace is None or not self.whereabouts.step_head(step, trace.heads_at(self.layer_index)):
            return False  # this layer's own heads (Qwen3-Next) count
        self.render_place()
        return True

    def change_layer(self, step: int) -> bool:
        """Next or previous layer (wrapping); False when the trace has one layer."""
        trace, b = self.trace, self._b_layered()
        if b is not None:
            self.whereabouts.step_b(step, 0, b.layers, b.heads)
        elif trace is None or not self.whereabouts.step_layer(step, trace.layers, trace.heads_at):
            return False
        self.render_place()
        return True

    def change_query(self, step: int) -> None:
        """Pick the query whose energy slice is shown (and move the cursor with it elsewhere)."""
        trace = self.trace
        if trace is None:
            return
        self.whereabouts.step_query(step, len(trace.query_tokens))
        if self.view is not None and self.view.grid.row_axis in ("query", "token"):
            self._place_cursor((min(self.whereabouts.energy_query, self.view.grid.rows - 1), self.heatmap.cursor[1]))
        self.render_place()

    def _place_cursor(self, cursor: tuple[int, int]) -> None:
        """Put the heatmap's cursor on a cell without a move to answer: the caller draws the place next."""
        with self.heatmap.prevent(Heatmap.CursorMoved):
            self.heatmap.cursor = cursor

    # ----- panels --------------------------------------------------------------------------
    def toggle_panel(self, panel: str) -> None:
        self.switch_panel(STAGES if self.panel == panel else panel)

    def toggle_scale(self) -> None:
        """One colour scale for all heads (heads panel) and for A and B (compare), or each on its own range."""
        self.whereabouts.toggle_scale()
        if self.panel in ("heads", "compare"):
            self.render_place()

    def switch_panel(self, panel: str) -> None:
        cursor = self.heatmap.cursor
        self.panel = panel
        self.query_one("#panels", ContentSwitcher).current = PANEL_WIDGETS[panel]
        self.set_class(panel in WHOLE, "-whole")
        self.set_class(panel == "compare", "-comparing")
        self._fit_panels()
        self.post_message(PanelChanged(panel, panel in FULL_WIDTH))
        focus = {"rollout": "#rollout-map", "alignment": "#alignment-map", "compare": "#compare-a-map"}.get(
            panel, "#" + PANEL_WIDGETS[panel])
        self.query_one(focus).focus()
        if panel in (STAGES, "compare"):
            self._place_cursor(cursor)  # one cursor, whichever heatmap shows it
        if self.trace is not None:
            self.render_place()

    def _fit_panels(self) -> None:
        """The heatmap is no taller than its matrix, so the inspector gets the rest; other panels fill."""
        switcher = self.query_one("#panels", ContentSwitcher)
        own = self.query_one("#heatmap", Heatmap)
        if self.panel == STAGES:
            switcher.styles.max_height = own.styles.max_height
        elif self.panel == "compare":
            compare = self.query_one(CompareView)
            compare.fit_titles()
            tallest = compare.tallest()
            switcher.styles.max_height = None if tallest is None else tallest + compare.chrome
        else:
            switcher.styles.max_height = None

    def grid_panel(self) -> str:
        """What g shows: a transformer's layer × head grid, a decode's alignment so far, or the heads."""
        if self.shown is not None and self.shown.stats is not None:
            return "model_grid"
        if self.trace is not None and aligned(self.trace):  # flash's steps are tiles, not a decode
            return "alignment"
        return "heads"


