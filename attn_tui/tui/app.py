"""The attn-tui app: holds the request and the last good trace, and moves through its stages.

torch is imported in a worker thread so the first frame appears at once; every
computation runs in an exclusive thread worker that posts its result back as a message.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Label, Static

from attn_tui.core.samples import load_samples
from attn_tui.core.settings import MatrixInput, Request, Settings
from attn_tui.render.legend import legend
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.commands import AttnCommands
from attn_tui.tui.compute import compute_message
from attn_tui.tui.messages import (CellClicked, ComputeFailed, SampleChosen, SettingsEdited, SourceEdited,
                                   TorchFailed, TorchReady, TraceReady)
from attn_tui.tui.screens.help import HelpScreen
from attn_tui.tui.view import StageView, heads_grids, param_grids, stage_view
from attn_tui.tui.widgets.explanation import Explanation
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.heatmap import Heatmap
from attn_tui.tui.widgets.input_pane import InputPane
from attn_tui.tui.widgets.inspector import Inspector
from attn_tui.tui.widgets.model_pane import ModelPane
from attn_tui.tui.widgets.scroll import QuietScroll
from attn_tui.tui.widgets.stage_bar import StageBar

DEFAULT_SAMPLE = "korean"
MIN_SIZE = (60, 18)  # below this the layout cannot hold its panes
WIDE = 120  # from this width the inspector and explanation sit side by side
NARROW = 80  # below this width the left column gives up some of its room
PLAY_INTERVAL = 0.8  # seconds per stage while playing


class AttnApp(App[int]):
    """Three panes (model, input, heatmap) around one Request and the Trace computed from it."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "attn-tui"
    COMMANDS = App.COMMANDS | {AttnCommands}
    BINDINGS = APP_BINDINGS

    def __init__(self, request: Request | None = None, play_interval: float = PLAY_INTERVAL) -> None:
        super().__init__()
        self.request = request or load_samples()[DEFAULT_SAMPLE].request
        self.play_interval = play_interval
        self.trace = None  # the last trace computed without error
        self.view: StageView | None = None
        self.generation = 0  # of the latest request sent to a worker
        self.shown_generation = 0  # of the latest result (trace or error) handled
        self.torch_ready = False
        self.stage_index = 0
        self.head = 0
        self.cursor = (0, 0)  # (row, col) in the displayed grid
        self.energy_query = 0  # the query an energy slice shows
        self.language = "en"
        self.panel: str | None = None  # None: the heatmap; "heads" or "params": small multiples
        self.error = ""
        self._player = None

    # ----- layout and start-up -------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield ModelPane(self.request.settings, id="model")
                yield InputPane(id="inputs")
            with Vertical(id="right"):
                yield StageBar("loading torch…", id="stage-bar")
                yield Label("", id="error")
                yield Heatmap(id="heatmap")
                yield HeadsGrid(id="heads-grid")
                yield Static("", id="legend")
                with Horizontal(id="bottom"):
                    with QuietScroll(id="inspector-box"):
                        yield Inspector("", id="inspector")
                    yield Explanation("", id="explanation")
        yield Static(f"terminal too small\nattn-tui needs at least {MIN_SIZE[0]}×{MIN_SIZE[1]}",
                     id="too-small")
        yield Footer()

    def on_mount(self) -> None:
        inputs = self.query_one(InputPane)
        inputs.multihead = self.request.settings.variant == "multihead"
        inputs.load(self.request.source)
        self.query_one(Heatmap).focus()
        self._fit_screen(self.size.width, self.size.height)
        self._load_torch()

    def on_resize(self, event: events.Resize) -> None:
        self._fit_screen(event.size.width, event.size.height)

    def _fit_screen(self, width: int, height: int) -> None:
        self.screen.set_class(width < MIN_SIZE[0] or height < MIN_SIZE[1], "-too-small")
        self.screen.set_class(width >= WIDE, "-wide")
        self.screen.set_class(width < NARROW, "-narrow")

    @work(thread=True, exclusive=True, group="torch")
    def _load_torch(self) -> None:
        start = time.perf_counter()
        try:
            import attn_tui.core.engine  # noqa: F401  (imports torch)
            import attn_tui.core.inspect  # noqa: F401
        except Exception as exc:  # a broken torch install must not take the app down
            self.post_message(TorchFailed(f"torch could not be imported: {exc}"))
            return
        self.post_message(TorchReady(time.perf_counter() - start))

    def on_torch_ready(self, message: TorchReady) -> None:
        self.torch_ready = True
        self._recompute()

    def on_torch_failed(self, message: TorchFailed) -> None:
        self._show_error(message.error)

    # ----- computing -----------------------------------------------------------------------
    def _recompute(self) -> None:
        if not self.torch_ready:
            return
        self.generation += 1
        self._compute(self.request, self.generation)

    @work(thread=True, exclusive=True, group="compute")
    def _compute(self, request: Request, generation: int) -> None:
        self.post_message(compute_message(request, generation))

    def on_trace_ready(self, message: TraceReady) -> None:
        if message.generation != self.generation:
            return  # a newer request is on its way
        self.shown_generation = message.generation
        previous = self.view.name if self.view else None
        self.trace = message.trace
        names = self.trace.names()
        if previous in names:
            self.stage_index = names.index(previous)
        elif self.stage_index >= len(names) or previous is None:
            self.stage_index = names.index("weights") if previous is None and "weights" in names else 0
        self.head = min(self.head, self.trace.heads - 1)
        self._show_error(" · ".join([*message.trace.warnings, *([message.notice] if message.notice else [])]))
        if message.notice:
            self.notify(message.notice, title="CUDA not available", severity="warning", timeout=10)
        self._show_stage()

    def on_compute_failed(self, message: ComputeFailed) -> None:
        if message.generation != self.generation:
            return
        self.shown_generation = message.generation
        kept = "  (showing the last valid result)" if self.trace is not None else ""
        self._show_error(f"✗ {message.error}{kept}")

    def _show_error(self, text: str) -> None:
        self.error = text
        label = self.query_one("#error", Label)
        label.update(text)
        label.set_class(bool(text), "-shown")

    # ----- edits from the panes ------------------------------------------------------------
    def on_settings_edited(self, message: SettingsEdited) -> None:
        self._apply_settings(message.settings)

    def _apply_settings(self, settings: Settings) -> None:
        inputs = self.query_one(InputPane)
        inputs.multihead = settings.variant == "multihead"
        source = self.request.source
        if inputs.multihead and isinstance(source, MatrixInput):
            source = inputs.matrix_source(x=True) or source
        self.request = Request(source, settings, self.request.custom_mask)
        if inputs.multihead and isinstance(source, MatrixInput):
            self.generation += 1  # whatever is in flight is no longer wanted
            self.shown_generation = self.generation
            self._show_error("✗ multihead projects Q, K and V itself: type token vectors in the X editor "
                             "(Matrices tab) or a sentence  (showing the last valid result)")
            return
        self._recompute()

    def on_source_edited(self, message: SourceEdited) -> None:
        self.request = Request(message.source, self.request.settings, None)
        self._recompute()

    def on_sample_chosen(self, message: SampleChosen) -> None:
        self.load_sample(message.name)

    def load_sample(self, name: str) -> None:
        """Load a sample whole: its input, variant, mask and every other setting."""
        sample = load_samples()[name]
        self.request = sample.request
        self.query_one(ModelPane).show(sample.request.settings)
        inputs = self.query_one(InputPane)
        inputs.multihead = sample.request.settings.variant == "multihead"
        inputs.load(sample.request.source)
        self.notify(sample.notes or sample.description, title=f"sample {name}", timeout=4)
        self._recompute()

    def set_variant(self, variant: str) -> None:
        settings = replace(self.request.settings, variant=variant)
        self.query_one(ModelPane).show(settings)
        self._apply_settings(settings)

    # ----- showing a stage -----------------------------------------------------------------
    def stage_names(self) -> list[str]:
        return self.trace.names() if self.trace is not None else []

    def palette_bindings(self) -> list[Binding]:
        return list(APP_BINDINGS)

    def go_to_stage(self, index: int) -> None:
        names = self.stage_names()
        if names:
            self.stage_index = max(0, min(index, len(names) - 1))
            self._show_stage()

    def _show_stage(self) -> None:
        if self.trace is None:
            return
        names = self.trace.names()
        self.view = view = stage_view(self.trace, names[self.stage_index], self.head, self.energy_query)
        grid = view.grid
        self.cursor = (min(self.cursor[0], grid.rows - 1), min(self.cursor[1], grid.cols - 1))
        head = f"head {view.head} of {self.trace.heads}" if view.head is not None else ""
        self.query_one(StageBar).show(names, self.stage_index, view.formula, view.shape, view.note, head)
        self.query_one(Heatmap).show(grid, self.cursor)
        lo, hi = grid.finite_range()
        fill = str(self.trace.config.get("mask_fill", "-inf"))
        self.query_one("#legend", Static).update(legend(grid.scale(), lo, hi, grid.marks(), fill))
        self.query_one(Explanation).show(view.name, self.trace.variant, self.language)
        self.query_one(ModelPane).show_view(self.head, self.trace.heads,
                                            f"{self.trace.device} · {self.trace.dtype}")
        if self.panel:
            self._show_panel()
        self._show_cell()

    def _show_cell(self) -> None:
        from attn_tui.core.inspect import explain

        view = self.view
        if view is None or self.trace is None:
            return
        row, col = self.cursor
        if view.grid.row_axis in ("query", "token"):
            self.energy_query = row
        index = view.index(row, col)
        arithmetic = explain(self.trace, view.name, view.head, index)
        where = f"{view.name}[{', '.join(map(str, index))}]  {view.grid.row_labels[row]!r} × " \
                f"{view.grid.col_labels[col]!r}"
        self.query_one(Inspector).show(where, arithmetic.title, arithmetic.lines, arithmetic.total,
                                       arithmetic.expected)

    def _show_panel(self) -> None:
        """The small-multiples panel: all heads of this stage (g) or the learned parameters (p)."""
        assert self.trace is not None and self.view is not None
        panel = self.query_one(HeadsGrid)
        if self.panel == "params":
            grids = param_grids(self.trace)
            panel.show("learned parameters (seeded; p returns to the heatmap)", grids, -1,
                       "" if grids else "this input has no learned parameters (typed Q, K, V)")
        else:
            grids, current, note = heads_grids(self.trace, self.view, self.energy_query)
            panel.show(f"{self.view.name}: all heads (g returns to the heatmap)", grids, current, note)

    # ----- actions ---------------------------------------------------------------------------
    def action_next_stage(self) -> None:
        self.go_to_stage(self.stage_index + 1)

    def action_prev_stage(self) -> None:
        self.go_to_stage(self.stage_index - 1)

    def action_first_stage(self) -> None:
        self.go_to_stage(0)

    def action_last_stage(self) -> None:
        self.go_to_stage(len(self.stage_names()) - 1)

    def action_stage(self, index: int) -> None:
        if index < len(self.stage_names()):
            self.go_to_stage(index)

    def action_play(self) -> None:
        """Start or stop stepping through the stages at a steady pace."""
        if self._player is not None:
            self._stop_playing()
            return
        if self.stage_index >= len(self.stage_names()) - 1:
            self.go_to_stage(0)
        self._player = self.set_interval(self.play_interval, self._advance)
        self.notify("playing: space stops", timeout=2)

    @property
    def playing(self) -> bool:
        return self._player is not None

    def _advance(self) -> None:
        if self.stage_index >= len(self.stage_names()) - 1:
            self._stop_playing()
        else:
            self.action_next_stage()

    def _stop_playing(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player = None

    def action_next_head(self) -> None:
        self._change_head(1)

    def action_prev_head(self) -> None:
        self._change_head(-1)

    def _change_head(self, step: int) -> None:
        heads = self.trace.heads if self.trace is not None else 1
        if heads == 1:
            self.notify("only the multihead variant has several heads", timeout=3)
            return
        self.head = (self.head + step) % heads
        self._show_stage()

    @property
    def grid_mode(self) -> bool:
        return self.panel == "heads"

    def action_toggle_grid(self) -> None:
        self._toggle_panel("heads")

    def action_toggle_params(self) -> None:
        self._toggle_panel("params")

    def _toggle_panel(self, panel: str) -> None:
        self.panel = None if self.panel == panel else panel
        self.query_one("#right").set_class(self.panel is not None, "-grid")
        (self.query_one(HeadsGrid) if self.panel else self.query_one(Heatmap)).focus()
        if self.trace is not None:
            self._show_stage()

    def action_toggle_language(self) -> None:
        self.language = "ko" if self.language == "en" else "en"
        if self.view is not None and self.trace is not None:
            self.query_one(Explanation).show(self.view.name, self.trace.variant, self.language)

    def action_cursor(self, d_row: int, d_col: int) -> None:
        if self.view is None:
            return
        grid = self.view.grid
        row = max(0, min(grid.rows - 1, self.cursor[0] + d_row))
        col = max(0, min(grid.cols - 1, self.cursor[1] + d_col))
        self._set_cursor(row, col)

    def _set_cursor(self, row: int, col: int) -> None:
        self.cursor = (row, col)
        self.query_one(Heatmap).move_cursor(self.cursor)
        self._show_cell()

    def on_cell_clicked(self, message: CellClicked) -> None:
        self._set_cursor(message.row, message.col)

    def action_query(self, step: int) -> None:
        """Pick the query whose energy slice is shown (and move the cursor with it elsewhere)."""
        if self.trace is None:
            return
        self.energy_query = max(0, min(len(self.trace.query_tokens) - 1, self.energy_query + step))
        if self.view is not None and self.view.grid.row_axis in ("query", "token"):
            self.cursor = (self.energy_query, self.cursor[1])
        self._show_stage()

    def action_focus_heatmap(self) -> None:
        self.query_one(Heatmap).focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.palette_bindings()))


def run_app(request: Request | None = None) -> int:
    """Run the app on `request` (None: the default sample) and return the exit code."""
    result = AttnApp(request).run()
    return 0 if result is None else int(result)
