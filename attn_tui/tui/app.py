"""The attn-tui app: what is asked, what is on show, and the one worker that turns the first into the second.

torch is imported in a worker thread so the first frame appears at once; every ask (a
variant on an input, or a model on a sentence) goes through the same exclusive thread
worker, which posts back one `TraceReady` or one `ComputeFailed`. Where the user is in
the trace lives in the Explorer; the app forwards the keys.
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Footer, Static

from attn_tui.core.samples import DEFAULT_SAMPLE, load_samples
from attn_tui.core.settings import MatrixInput, ModelInput, Request, SentenceInput, Settings
from attn_tui.core.variants import VARIANTS
from attn_tui.present.shown import Shown
from attn_tui.present.stage_view import StageView
from attn_tui.sources.base import Ask
from attn_tui.sources.names import DATE_MODELS
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.classes import set_classes
from attn_tui.tui.messages import (
    ComputeFailed,
    ModelChosen,
    PanelChanged,
    SampleChosen,
    SettingsEdited,
    SettingsRejected,
    SourceEdited,
    TargetEdited,
    TorchFailed,
    TorchReady,
    TraceReady,
)
from attn_tui.tui.screens.help import HelpScreen
from attn_tui.tui.widgets.explorer import Explorer
from attn_tui.tui.widgets.input_pane import InputPane
from attn_tui.tui.widgets.model_pane import ModelPane

if TYPE_CHECKING:
    from textual.command import Provider

MIN_SIZE = (60, 18)  # below this the layout cannot hold its panes
WIDE = 120  # from this width the inspector and explanation sit side by side
NARROW = 80  # below this width the left column gives up some of its room
PLAY_INTERVAL = 0.8  # seconds per stage while playing
OWN = ""  # the key of the attention variants among the kept asks
DATE_SAMPLE = "dates_english"  # what a date model reads the first time it is chosen


def palette_commands() -> type[Provider]:
    """Our palette commands, imported when the palette first opens (not before the first frame)."""
    from attn_tui.tui.commands import AttnCommands

    return AttnCommands


def source_key(ask: Ask) -> str:
    return ask.name if isinstance(ask, ModelInput) else OWN


class AttnApp(App[int]):
    """Model and input panes on the left, the explorer on the right, around one ask and what is on show."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "attn-tui"
    COMMANDS = App.COMMANDS | {palette_commands}
    BINDINGS: ClassVar[list[BindingType]] = [*APP_BINDINGS]

    shown: reactive[Shown | None] = reactive(None, init=False)
    language: reactive[str] = reactive("en", init=False)

    def __init__(self, request: Request | None = None, play_interval: float = PLAY_INTERVAL,
                 model: ModelInput | None = None, max_memory: int | None = None, recorded: Any = None) -> None:
        super().__init__()
        self.recorded = recorded  # a Trace recorded from the user's code: shown first, instead of computing
        variants = request or load_samples()[DEFAULT_SAMPLE].request
        self.wanted: Ask = model or variants  # what the user asks for now (may be in flight, or invalid)
        self.kept: dict[str, Ask] = {OWN: variants}  # the last ask of each source, restored on a switch
        self.max_memory = max_memory  # bytes a computation may take; None: the default share
        self.play_interval = play_interval
        self.first_stage: str | None = "weights"  # where the first trace opens
        self.generation = 0  # of the latest ask sent to the worker
        self.shown_generation = 0  # of the latest result (trace or error) handled
        self.torch_ready = False
        self.loaded_models: set[str] = set()  # names that loaded once: no loading indicator again
        self.error = ""
        self._player: Any = None

    # ----- layout and start-up -------------------------------------------------------------
    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield ModelPane(self.variants.settings, id="model")
                yield InputPane(id="inputs")
            yield Explorer(id="right")
        yield Static(f"terminal too small\nattn-tui needs at least {MIN_SIZE[0]}×{MIN_SIZE[1]}", id="too-small")
        yield Footer()

    @property
    def explorer(self) -> Explorer:
        return self.query_one(Explorer)

    @property
    def variants(self) -> Request:
        """The variants' ask: the one asked now, or the one kept while a model is shown."""
        kept = self.wanted if isinstance(self.wanted, Request) else self.kept[OWN]
        assert isinstance(kept, Request)
        return kept

    @property
    def trace(self) -> Any:
        """The trace on show (None until the first computation succeeds)."""
        return None if self.shown is None else self.shown.trace

    @property
    def view(self) -> StageView | None:
        """The stage view on show: what the heatmap draws and the inspector explains."""
        return self.explorer.view

    @property
    def cursor(self) -> tuple[int, int]:
        return self.explorer.heatmap.cursor

    def on_mount(self) -> None:
        self._show_ask(self.wanted)
        self.explorer.heatmap.focus()
        self._fit_screen(self.size.width, self.size.height)
        # After the first frame is painted: torch's import holds the GIL for seconds and would delay it.
        self.call_after_refresh(self._load_torch)

    def notify(self, message: str, *, markup: bool = False, **options: Any) -> None:
        """Notifications carry user text (sample notes, model paths, errors): never read as markup."""
        super().notify(message, markup=markup, **options)

    def on_resize(self, event: events.Resize) -> None:
        self._fit_screen(event.size.width, event.size.height)

    def _fit_screen(self, width: int, height: int) -> None:
        set_classes(self.screen, {"-too-small": width < MIN_SIZE[0] or height < MIN_SIZE[1], "-wide": width >= WIDE,
                                  "-narrow": width < NARROW})

    @work(thread=True, exclusive=True, group="torch")
    def _load_torch(self) -> None:
        start = time.perf_counter()
        try:
            import attn_tui.core.engine
            import attn_tui.core.explain  # noqa: F401  (torch, and the engine on top of it)
        except Exception as exc:
            self.post_message(TorchFailed(f"torch could not be imported: {exc}"))
            return
        self.post_message(TorchReady(time.perf_counter() - start))

    def on_torch_ready(self, message: TorchReady) -> None:
        self.torch_ready = True
        if self.recorded is not None:  # `attn-tui trace`: the trace exists already; editing a setting leaves it
            self.generation += 1
            self.post_message(TraceReady(self.generation, Shown(self.wanted, self.recorded)))
            self.query_one(ModelPane).show_status(f"✓ {self.recorded.meta.title}")
            self.recorded = None
            return
        self._compute_wanted()

    def on_torch_failed(self, message: TorchFailed) -> None:
        self._show_error(message.error)

    # ----- computing: one path for every source --------------------------------------------
    def ask(self, ask: Ask) -> None:
        """Ask for `ask`: remember it as its source's latest, and compute it."""
        self.wanted = ask
        self.kept[source_key(ask)] = ask
        self._compute_wanted()

    def _compute_wanted(self) -> None:
        if not self.torch_ready:
            return
        self.generation += 1
        wanted = self.wanted
        loading = isinstance(wanted, ModelInput) and wanted.name not in self.loaded_models
        self.explorer.heatmap.loading = loading
        self.query_one(ModelPane).show_status(f"loading {wanted.name}…" if isinstance(wanted, ModelInput) and loading
                                              else "")
        self._compute(self.wanted, self.generation)

    @work(thread=True, exclusive=True, group="compute")
    def _compute(self, ask: Ask, generation: int) -> None:
        from attn_tui.core.errors import AttnError, describe
        from attn_tui.present.shown import run_ask

        try:
            self.post_message(TraceReady(generation, run_ask(ask, self.max_memory)))
        except AttnError as exc:
            self.post_message(ComputeFailed(generation, ask, str(exc)))
        except Exception as exc:
            self.post_message(ComputeFailed(generation, ask, describe(exc)))

    def on_trace_ready(self, message: TraceReady) -> None:
        if message.generation != self.generation:
            return  # a newer ask is on its way
        self.shown_generation = message.generation
        self.shown = message.shown

    def watch_shown(self, old: Shown | None, shown: Shown | None) -> None:
        if shown is None:
            return
        self._settled(shown.ask)
        trace = shown.trace
        if isinstance(shown.ask, ModelInput):
            self.loaded_models.add(shown.ask.name)
            self.query_one(ModelPane).show_status(f"✓ {trace.meta.title}, {trace.layers}×{trace.heads} heads"
                                                  if trace.layers > 1 else f"✓ {trace.steps()} decoder steps")
        explorer = self.explorer
        if isinstance(shown.ask, ModelInput) and (old is None or source_key(old.ask) != shown.ask.name):
            explorer.layer_index, explorer.head = shown.ask.layer, shown.ask.head  # a model's own first place
        explorer.show(shown, self.first_stage)
        self.first_stage = None
        self._show_error(" · ".join(map(str, [*trace.warnings, *([shown.notice] if shown.notice else [])])))
        if shown.notice:
            self.notify(shown.notice, title="CUDA not available", severity="warning", timeout=10)
        self._show_pane_view()

    def on_compute_failed(self, message: ComputeFailed) -> None:
        if message.generation != self.generation:
            return
        self.shown_generation = message.generation
        self._settled(message.ask)
        kept = "  (showing the last valid result)" if self.shown is not None else ""
        self._show_error(f"✗ {message.error}{kept}")
        failed = message.ask
        if isinstance(failed, ModelInput):
            self.query_one(ModelPane).show_status(f"✗ could not open {failed.name[:40]}"
                                                  if failed.name not in self.loaded_models else "")
        if isinstance(failed, ModelInput) and failed.name not in self.loaded_models:
            # A model that cannot be opened: say so loudly and go back to what was shown.
            self.notify(message.error, title=f"cannot open {failed.name[:60]}", severity="error", timeout=10)
            self.kept.pop(failed.name, None)
            back = self.shown.ask if self.shown is not None else self.kept[OWN]
            self.wanted = back
            self._show_ask(back, matrices=False)
            if self.shown is None:
                self._compute_wanted()

    def _settled(self, ask: Ask) -> None:
        """A computation ended: the loading indicator goes."""
        self.explorer.heatmap.loading = False
        if not isinstance(ask, ModelInput):
            self.query_one(ModelPane).show_status("")

    def _show_error(self, text: str) -> None:
        self.error = text
        self.explorer.show_error(text)

    def _show_ask(self, ask: Ask, matrices: bool = True) -> None:
        """Put an ask into the panes without posting edits back; the matrix editors only when `matrices`."""
        inputs, pane = self.query_one(InputPane), self.query_one(ModelPane)
        model = ask if isinstance(ask, ModelInput) else None
        inputs.model_mode = model is not None
        inputs.multihead = VARIANTS[self.variants.settings.variant].takes_x
        pane.show_model(model)
        if model is not None:
            inputs.show_sentence(model.text)
        elif matrices:
            inputs.load(ask.source)  # type: ignore[union-attr]
        else:
            source = ask.source  # type: ignore[union-attr]
            inputs.show_sentence(source.text if isinstance(source, SentenceInput) else inputs.sentence)

    def _show_pane_view(self) -> None:
        """The model pane's head (and layer) line and the device the trace ran on."""
        trace, explorer = self.trace, self.explorer
        if trace is None:
            return
        pane = self.query_one(ModelPane)
        pane.show_view(explorer.head, trace.heads, f"{trace.device} · {trace.dtype}")
        pane.show_layer(explorer.layer_index, trace.layers)
        if isinstance(self.wanted, ModelInput):
            self.query_one(InputPane).show_model_tokens(trace)

    # ----- edits from the panes ------------------------------------------------------------
    def on_settings_edited(self, message: SettingsEdited) -> None:
        self._apply_settings(message.settings)

    def on_settings_rejected(self, message: SettingsRejected) -> None:
        if message.error:
            kept = "  (showing the last valid result)" if self.shown is not None else ""
            self._show_error(f"✗ {message.error}{kept}")
        elif self.error.startswith("✗"):
            self._show_error(" · ".join(map(str, self.trace.warnings)) if self.trace is not None else "")

    def _apply_settings(self, settings: Settings) -> None:
        inputs = self.query_one(InputPane)
        inputs.multihead = VARIANTS[settings.variant].takes_x
        source = self.variants.source
        if inputs.multihead and isinstance(source, MatrixInput):
            source = inputs.matrix_source(x=True) or source
        request = Request(source, settings, self.variants.custom_mask)
        if inputs.multihead and isinstance(source, MatrixInput):
            self.kept[OWN] = self.wanted = request
            self.generation += 1  # whatever is in flight is no longer wanted
            self.shown_generation = self.generation
            self._show_error("✗ multihead projects Q, K and V itself: type token vectors in the X editor "
                             "(Matrices tab) or a sentence  (showing the last valid result)")
            return
        self.ask(request)

    def on_source_edited(self, message: SourceEdited) -> None:
        if isinstance(self.wanted, ModelInput):
            if not isinstance(message.source, SentenceInput):
                self._show_error(f"✗ {self.wanted.name} reads a sentence: type it in the Sentence tab "
                                 "(or pick 'variants' in the model pane for typed matrices)")
                return
            self.ask(replace(self.wanted, text=message.source.text))
            return
        self.ask(Request(message.source, self.variants.settings, None))

    def on_sample_chosen(self, message: SampleChosen) -> None:
        self.load_sample(message.name)

    def load_sample(self, name: str) -> None:
        """Load a sample whole: its input, variant, mask and every other setting."""
        sample = load_samples()[name]
        self.kept[OWN] = sample.request
        self.query_one(ModelPane).show(sample.request.settings)
        ask: Ask = sample.model or sample.request
        self._show_ask(ask)
        if sample.model is not None:
            self.query_one(InputPane).load(sample.request.source)
            self.query_one(InputPane).show_sentence(sample.model.text)
        self.notify(sample.notes or sample.description, title=f"sample {name}", timeout=4)
        self.ask(ask)

    def set_variant(self, variant: str) -> None:
        settings = replace(self.variants.settings, variant=variant)
        if isinstance(self.wanted, ModelInput):
            self.choose_model(None)
        self.query_one(ModelPane).show(settings)
        self._apply_settings(settings)

    def on_model_chosen(self, message: ModelChosen) -> None:
        self.choose_model(message.name)

    def choose_model(self, name: str | None) -> None:
        """Switch to a model by name or path (None: back to the variants).

        Each source keeps its own ask, and switching back restores it; a date model
        starts on a date, a transformer on the sentence typed for the variants. The
        matrix editors are never touched.
        """
        inputs = self.query_one(InputPane)
        current = self.wanted
        if isinstance(current, ModelInput):
            self.kept[current.name] = replace(current, text=inputs.sentence)
        elif isinstance(current.source, SentenceInput):
            self.kept[OWN] = replace(current, source=SentenceInput(inputs.sentence))
        if name is None:
            ask: Ask = self.kept[OWN]
        else:
            kept = self.kept.get(name)
            if isinstance(kept, ModelInput):
                ask = kept
            else:
                sample = load_samples()[DATE_SAMPLE].model
                text = sample.text if name in DATE_MODELS and sample is not None else (
                    inputs.sentence if isinstance(self.variants.source, SentenceInput) else "the cat sat on the mat")
                ask = ModelInput(name, text, device=self.variants.settings.device)
        self._show_ask(ask, matrices=False)
        self.ask(ask)

    def on_target_edited(self, message: TargetEdited) -> None:
        if isinstance(self.wanted, ModelInput) and self.wanted.name in DATE_MODELS:
            self.ask(replace(self.wanted, target=message.target, teacher_forcing=message.teacher_forcing))

    def on_panel_changed(self, message: PanelChanged) -> None:
        self.query_one("#main").set_class(message.full_width, "-full")

    # ----- keys ----------------------------------------------------------------------------
    def palette_bindings(self) -> list[Binding]:
        return list(APP_BINDINGS)

    def stage_names(self) -> list[str]:
        return self.explorer.stage_names()

    def go_to_stage(self, index: int) -> None:
        self.explorer.go_to_stage(index)

    def action_next_stage(self) -> None:
        self.explorer.go_to_place(self.explorer.stage_index + 1)

    def action_prev_stage(self) -> None:
        self.explorer.go_to_place(self.explorer.stage_index - 1)

    def action_first_stage(self) -> None:
        self.explorer.go_to_place(0)

    def action_last_stage(self) -> None:
        self.explorer.go_to_place(len(self.explorer.places) - 1)

    def action_stage(self, index: int) -> None:
        if index < len(self.stage_names()):
            self.explorer.go_to_stage(index)

    def action_play(self) -> None:
        """Start or stop stepping through the stages (and decoder steps) at a steady pace."""
        if self._player is not None:
            self._stop_playing()
            return
        explorer = self.explorer
        if explorer.stage_index >= len(explorer.places) - 1:
            explorer.go_to_place(0)
        self._player = self.set_interval(self.play_interval, self._advance)
        self.notify("playing: space stops", timeout=2)

    @property
    def playing(self) -> bool:
        return self._player is not None

    def _advance(self) -> None:
        explorer = self.explorer
        if explorer.stage_index >= len(explorer.places) - 1:
            self._stop_playing()
        else:
            explorer.go_to_place(explorer.stage_index + 1)

    def _stop_playing(self) -> None:
        if self._player is not None:
            self._player.stop()
            self._player = None

    def action_cursor(self, d_row: int, d_col: int) -> None:
        self.explorer.heatmap.move_cursor_by(d_row, d_col)

    def action_query(self, step: int) -> None:
        self.explorer.change_query(step)

    def action_next_head(self) -> None:
        self._change_head(1)

    def action_prev_head(self) -> None:
        self._change_head(-1)

    def _change_head(self, step: int) -> None:
        if self.explorer.change_head(step):
            self._show_pane_view()
        else:
            self.notify("only multihead and real transformers have several heads", timeout=3)

    def action_next_layer(self) -> None:
        self._change_layer(1)

    def action_prev_layer(self) -> None:
        self._change_layer(-1)

    def _change_layer(self, step: int) -> None:
        if self.explorer.change_layer(step):
            self._show_pane_view()
        else:
            self.notify("only a real transformer has layers: pick minilm in the model pane", timeout=3)

    def action_toggle_grid(self) -> None:
        explorer = self.explorer
        whole = ("heads", "model_grid", "alignment")
        explorer.toggle_panel(explorer.panel if explorer.panel in whole else explorer.grid_panel())

    def action_toggle_rollout(self) -> None:
        if self.shown is None or self.shown.summary is None:
            self.notify("attention rollout needs a real transformer: pick minilm in the model pane", timeout=3)
            return
        self.explorer.toggle_panel("rollout")

    def action_toggle_params(self) -> None:
        self.explorer.toggle_panel("params")

    def action_toggle_language(self) -> None:
        self.language = "ko" if self.language == "en" else "en"

    def watch_language(self, language: str) -> None:
        from attn_tui import i18n

        i18n.set_language(language)
        self.explorer.language = language

    def action_focus_heatmap(self) -> None:
        self.explorer.heatmap.focus()

    def action_help(self) -> None:
        self.push_screen(HelpScreen(self.palette_bindings()))


def run_app(request: Request | None = None, model: ModelInput | None = None, max_memory: int | None = None,
            recorded: Any = None) -> int:
    """Run the app on `request` (None: the default sample), on `model`, or on a `recorded` trace; the exit code."""
    result = AttnApp(request, model=model, max_memory=max_memory, recorded=recorded).run()
    return 0 if result is None else int(result)
