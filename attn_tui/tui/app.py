"""The attn-tui app: holds the request and the last good trace, and moves through its stages.

torch is imported in a worker thread so the first frame appears at once; every
computation (a variant, or a real or trained model) runs in an exclusive thread worker
that posts its result back as a message. Keys live in navigation.py, models in model_mode.py.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

from rich.text import Text
from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Label, Static

from attn_tui.core.samples import DEFAULT_SAMPLE, load_samples
from attn_tui.core.settings import MatrixInput, ModelInput, Request, SentenceInput, Settings
from attn_tui.render.legend import legend
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.commands import AttnCommands
from attn_tui.tui.compute import compute_message
from attn_tui.tui.messages import (ComputeFailed, SampleChosen, SettingsEdited, SourceEdited, TorchFailed,
                                   TorchReady, TraceReady)
from attn_tui.tui.model_compute import model_message
from attn_tui.tui.model_mode import ModelMode
from attn_tui.tui.navigation import Navigation
from attn_tui.tui.positions import Position, bar_window, positions, same_place
from attn_tui.tui.view import StageView, heads_grids, param_grids, stage_view
from attn_tui.tui.widgets.explanation import Explanation
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.heatmap import Heatmap
from attn_tui.tui.widgets.input_pane import InputPane
from attn_tui.tui.widgets.inspector import Inspector
from attn_tui.tui.widgets.matrix_panel import MatrixPanel
from attn_tui.tui.widgets.model_grid import ModelGrid
from attn_tui.tui.widgets.model_pane import ModelPane
from attn_tui.tui.widgets.scroll import QuietScroll
from attn_tui.tui.widgets.stage_bar import StageBar

MIN_SIZE = (60, 18)  # below this the layout cannot hold its panes
WIDE = 120  # from this width the inspector and explanation sit side by side
NARROW = 80  # below this width the left column gives up some of its room
PLAY_INTERVAL = 0.8  # seconds per stage while playing


class AttnApp(Navigation, ModelMode, App[int]):
    """Three panes (model, input, heatmap) around one Request (or model run) and its Trace."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "attn-tui"
    COMMANDS = App.COMMANDS | {AttnCommands}
    BINDINGS = APP_BINDINGS

    def __init__(self, request: Request | None = None, play_interval: float = PLAY_INTERVAL,
                 model: ModelInput | None = None, max_memory: int | None = None) -> None:
        super().__init__()
        self.max_memory = max_memory  # bytes a computation may take; None: the default share
        self.request = request or load_samples()[DEFAULT_SAMPLE].request
        self.model = model  # a real or trained model to run instead of the variant; None: the variants
        self.good_model: ModelInput | None = None  # the model of the trace on show
        self.summary = None  # model_views.ModelSummary of the transformer on show
        self.loaded_models: set[str] = set()  # names that loaded once: no loading indicator again
        self.sentences: dict[str, str] = {}  # the sentence typed for each model ("" = the variants), kept on switches
        self.play_interval = play_interval
        self.trace = None  # the last trace computed without error
        self.places: list[Position] = []  # (stage, decoder step) the arrows move through
        self.view: StageView | None = None
        self.generation = 0  # of the latest request sent to a worker
        self.shown_generation = 0  # of the latest result (trace or error) handled
        self.torch_ready = False
        self.stage_index = 0
        self.head = 0
        self.cursor = (0, 0)  # (row, col) in the displayed grid
        self.energy_query = 0  # the query an energy slice shows
        self.language = "en"
        self.panel: str | None = None  # None: the heatmap; else heads, params, model_grid, rollout, alignment
        self.error = ""
        self._player = None

    def notify(self, message: str, *, markup: bool = False, **options) -> None:  # type: ignore[override]
        """Notifications carry user text (sample notes, model paths, errors): never read as markup."""
        super().notify(message, markup=markup, **options)

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
                yield ModelGrid(id="model-grid")
                yield MatrixPanel(id="rollout")
                yield MatrixPanel(id="alignment")
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
        inputs.model_mode = self.model is not None
        inputs.load(SentenceInput(self.model.text) if self.model else self.request.source)
        self.query_one(ModelPane).show_model(self.model)
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
        if self.model is not None and self.model.name not in self.loaded_models:
            self._loading(True)
        self._compute(self.request, self.model, self.generation)

    @work(thread=True, exclusive=True, group="compute")
    def _compute(self, request: Request, model: ModelInput | None, generation: int) -> None:
        if model is None:
            self.post_message(compute_message(request, generation, self.max_memory))
        else:
            self.post_message(model_message(model, request, generation, self.max_memory))

    def on_trace_ready(self, message: TraceReady) -> None:
        if message.generation != self.generation:
            return  # a newer request is on its way
        self.shown_generation = message.generation
        previous = self.places[self.stage_index] if self.view is not None and self.places else None
        self.trace, self.summary, self.good_model = message.trace, message.summary, message.model
        self._model_settled()
        self.places = places = positions(self.trace)
        found = same_place(places, previous)
        if found is not None:
            self.stage_index = found
        elif self.stage_index >= len(places) or previous is None:
            weights = [n for n, (name, _) in enumerate(places) if name == "weights"]
            self.stage_index = weights[0] if previous is None and weights else 0
        self.head = min(self.head, self.trace.heads - 1)
        self._panel_still_fits()
        self._show_error(" · ".join([*message.trace.warnings, *([message.notice] if message.notice else [])]))
        if message.notice:
            self.notify(message.notice, title="CUDA not available", severity="warning", timeout=10)
        self._show_stage()

    def on_compute_failed(self, message: ComputeFailed) -> None:
        if message.generation != self.generation:
            return
        self.shown_generation = message.generation
        self._model_settled()
        kept = "  (showing the last valid result)" if self.trace is not None else ""
        self._show_error(f"✗ {message.error}{kept}")
        failed, good = message.model, self.good_model
        if failed is not None and (good is None or failed.name != good.name):
            # A model that cannot be opened: say so loudly and go back to what was shown.
            self.notify(message.error, title=f"cannot open {failed.name}", severity="error", timeout=10,
                        markup=False)
            self.model = good
            inputs = self.query_one(InputPane)
            inputs.model_mode = good is not None
            inputs.show_sentence(good.text if good is not None else self.sentences.get("", inputs.sentence))
            self.query_one(ModelPane).show_model(good)
            if self.trace is None:
                self._recompute()

    def _model_settled(self) -> None:
        """A model run ended (or none was asked for): the loading indicator goes."""
        self._loading(False)
        pane = self.query_one(ModelPane)
        if self.good_model is not None and self.trace is not None:
            self.loaded_models.add(self.good_model.name)
            cfg = self.trace.config
            kind = (f"{cfg.get('attention')}, {self.trace.steps()} steps" if self.trace.steps()
                    else f"{cfg.get('family')}, {cfg.get('layers')}×{cfg.get('heads')} heads")
            pane.show_status(f"✓ {kind}")
        else:
            pane.show_status("")

    def _show_error(self, text: str) -> None:
        self.error = text
        label = self.query_one("#error", Label)
        label.update(Text(text))
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
        if self.model is not None:
            if not isinstance(message.source, SentenceInput):
                self._show_error(f"✗ {self.model.name} reads a sentence: type it in the Sentence tab "
                                 "(or pick 'variants' in the model pane for typed matrices)")
                return
            self.model = replace(self.model, text=message.source.text)
        self._recompute()

    def on_sample_chosen(self, message: SampleChosen) -> None:
        self.load_sample(message.name)

    def load_sample(self, name: str) -> None:
        """Load a sample whole: its input, variant, mask and every other setting."""
        sample = load_samples()[name]
        self.request = sample.request
        self.model = sample.model
        pane = self.query_one(ModelPane)
        pane.show(sample.request.settings)
        pane.show_model(sample.model)
        inputs = self.query_one(InputPane)
        inputs.multihead = sample.request.settings.variant == "multihead"
        inputs.model_mode = sample.model is not None
        inputs.load(sample.request.source)
        self.notify(sample.notes or sample.description, title=f"sample {name}", timeout=4)
        self._recompute()

    def set_variant(self, variant: str) -> None:
        if self.model is not None:
            self.choose_model(None)
        settings = replace(self.request.settings, variant=variant)
        self.query_one(ModelPane).show(settings)
        self._apply_settings(settings)

    # ----- showing a stage -----------------------------------------------------------------
    def palette_bindings(self) -> list[Binding]:
        return list(APP_BINDINGS)

    def _show_stage(self) -> None:
        if self.trace is None:
            return
        name, step = self.places[self.stage_index]
        self.view = view = stage_view(self.trace, name, self.head, self.energy_query, step)
        grid = view.grid
        self.cursor = (min(self.cursor[0], grid.rows - 1), min(self.cursor[1], grid.cols - 1))
        window = bar_window(self.places, self.stage_index)
        head = self._model_lines() or (f"head {view.head} of {self.trace.heads}" if view.head is not None else "")
        self.query_one(StageBar).show([self.places[n][0] for n in window], window.index(self.stage_index),
                                      view.formula, view.shape, view.note, head)
        self.query_one(Heatmap).show(grid, self.cursor)
        lo, hi = grid.finite_range()
        fill = str(self.trace.config.get("mask_fill", "-inf"))
        self.query_one("#legend", Static).update(legend(grid.scale(), lo, hi, grid.marks(), fill))
        self._show_explanation()
        self._show_pane_view()
        if self.panel:
            self._show_panel()
        self._show_cell()

    def _show_pane_view(self) -> None:
        """The model pane's head (and layer) line and the device the trace ran on."""
        pane = self.query_one(ModelPane)
        used = f"{self.trace.device} · {self.trace.dtype}"
        if self.transformer:
            cfg = self.trace.config
            pane.show_view(self.model.head, int(cfg["heads"]), used)
            pane.show_layer(self.model.layer, int(cfg["layers"]))
        else:
            pane.show_view(self.head, self.trace.heads, used)
        self._show_model_tokens()

    def _show_cell(self) -> None:
        from attn_tui.core.inspect import explain

        view = self.view
        if view is None or self.trace is None:
            return
        row, col = self.cursor
        if view.grid.row_axis in ("query", "token"):
            self.energy_query = row
        index = view.index(row, col)
        arithmetic = explain(self.trace, view.name, view.head, index, view.step)
        where = f"{view.name}[{', '.join(map(str, index))}]  {view.grid.row_labels[row]!r} × " \
                f"{view.grid.col_labels[col]!r}"
        self.query_one(Inspector).show(where, arithmetic.title, arithmetic.lines, arithmetic.total,
                                       arithmetic.expected)

    def _show_panel(self) -> None:
        """The small-multiples panel: all heads of this stage (g) or the learned parameters (p)."""
        assert self.trace is not None and self.view is not None
        if self._show_model_panel():
            return
        panel = self.query_one(HeadsGrid)
        if self.panel == "params":
            grids = param_grids(self.trace)
            panel.show("learned parameters (seeded; p returns to the heatmap)", grids, -1,
                       "" if grids else "this input has no learned parameters (typed Q, K, V)")
        else:
            grids, current, note = heads_grids(self.trace, self.view, self.energy_query)
            panel.show(f"{self.view.name}: all heads (g returns to the heatmap)", grids, current, note)

    # ----- actions that depend on the kind of trace ------------------------------------------
    def action_next_head(self) -> None:
        self._change_head(1)

    def action_prev_head(self) -> None:
        self._change_head(-1)

    def _change_head(self, step: int) -> None:
        if self._change_model_head(0, step):
            return
        heads = self.trace.heads if self.trace is not None else 1
        if heads == 1:
            self.notify("only the multihead variant and real transformers have several heads", timeout=3)
            return
        self.head = (self.head + step) % heads
        self._show_stage()

    @property
    def grid_mode(self) -> bool:
        return self.panel in ("heads", "model_grid", "alignment")

    def action_toggle_grid(self) -> None:
        self._toggle_panel(self.panel if self.grid_mode else self._grid_panel())

    def action_toggle_params(self) -> None:
        self._toggle_panel("params")


def run_app(request: Request | None = None, model: ModelInput | None = None, max_memory: int | None = None) -> int:
    """Run the app on `request` (None: the default sample), or on `model`, and return the exit code."""
    result = AttnApp(request, model=model, max_memory=max_memory).run()
    return 0 if result is None else int(result)
