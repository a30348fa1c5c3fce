"""The attn-tui app: what is asked, what is on show, and the workers that turn the first into the second.

torch is imported in a worker thread so the first frame appears at once (its native libraries
are opened sooner, off the GIL, while that frame is drawn: tui/startup.py); every ask (a
variant on an input, or a model on a sentence) goes through the same exclusive thread
worker, which posts back one `TraceReady` or one `ComputeFailed`; compare mode's B has a
worker of its own. What is asked, kept per source, undone and on show, and which result is
stale, and where the user is, is one plain `AppState` (state.py): the App routes messages and
worker results to it and draws what its transitions say. What the user does is answered by small
controllers the App composes, each over the App as `Host` (host.py) sees it: the keys that move
(navigation.py), writing token by token (writing.py), the edits that make asks and the session
(editing.py), compare mode (comparing.py), the atlas (atlas_link.py) and exports (exporting.py).
Textual calls actions and handlers on the App: its entry points are generated from the controllers
(`answered_by`), each answered by its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import events, work
from textual.app import App, ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.screen import Screen
from textual.widgets import Static

from attn_tui import i18n
from attn_tui.ask.applies import applicable
from attn_tui.ask.samples import DEFAULT_SAMPLE, load_samples
from attn_tui.ask.settings import Ask, ModelAsk, RecordAsk, VariantAsk
from attn_tui.i18n import Msg, Plural, _
from attn_tui.present.recorded import recorded_rows
from attn_tui.present.stage_view import StageView
from attn_tui.present.text import printable
from attn_tui.trace.shown import Shown
from attn_tui.tui import served
from attn_tui.tui.atlas_link import AtlasLink, atlas_drops_b, atlas_shows_b, probe_note
from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.classes import MIN_SIZE, screen_classes, set_classes
from attn_tui.tui.comparing import Comparing
from attn_tui.tui.editing import Editing
from attn_tui.tui.ending import SHUTDOWN_GRACE, catch_ending_signals, end_within, exit_code
from attn_tui.tui.exporting import Exporting
from attn_tui.tui.host import answered_by
from attn_tui.tui.messages import (
    ComputeFailed,
    LoadProgressed,
    PanelChanged,
    TorchFailed,
    TorchReady,
    TraceGrew,
    TraceReady,
)
from attn_tui.tui.navigation import Navigation
from attn_tui.tui.screens.main import MainScreen
from attn_tui.tui.startup import Warmup
from attn_tui.tui.state import AppState, said_of, source_key
from attn_tui.tui.widgets.explorer import Explorer
from attn_tui.tui.widgets.footer import LocalFooter
from attn_tui.tui.widgets.input_pane import InputPane
from attn_tui.tui.widgets.model_pane import ModelPane
from attn_tui.tui.workers import SupersededError, post_growth, post_progress, while_running
from attn_tui.tui.writing import Writing

if TYPE_CHECKING:
    from textual.command import Provider

    from attn_tui.present.compare import Comparison
    from attn_tui.sources.progress import Progress
    from attn_tui.trace.stage import Trace

PLAY_INTERVAL = 0.8  # seconds per stage while playing


def palette_commands() -> type[Provider]:
    """Our palette commands, imported when the palette first opens (not before the first frame)."""
    from attn_tui.tui.commands import AttnCommands

    return AttnCommands


@answered_by(navigation=Navigation, writing=Writing, editing=Editing, comparing=Comparing, atlas_link=AtlasLink,
             exporting=Exporting)
class AttnApp(App[int]):
    """Model and input panes on the left, the explorer on the right, around one ask and what is on show."""

    CSS_PATH = Path(__file__).with_name("app.tcss")  # absolute, so subclasses elsewhere find it
    TITLE = "attn-tui"
    COMMANDS = App.COMMANDS | {palette_commands}
    BINDINGS: ClassVar[list[BindingType]] = [*APP_BINDINGS]

    shown: reactive[Shown | None] = reactive(None, init=False)
    language: reactive[str] = reactive("en", init=False)

    def __init__(self, request: VariantAsk | None = None, play_interval: float = PLAY_INTERVAL,
                 model: ModelAsk | None = None, max_memory: int | None = None, fresh: bool = True,
                 first_stage: str | None = None, record: RecordAsk | None = None, notice: Msg | None = None,
                 sample: str | None = None) -> None:
        super().__init__()
        self.notice = notice  # what the command line chose for the user (a model's sample sentence), said at start
        default = load_samples()[DEFAULT_SAMPLE]
        given = request is not None or model is not None or record is not None  # the command line named one
        if record is not None and first_stage is None:
            first_stage = "weights"  # the user's own code opens where its attention is
        self.state = AppState(request or default.request, record or model, given=given,
                              first_stage=first_stage if given else default.stage,
                              typed=lambda: self.input_pane.typed())
        started_on = load_samples()[sample] if sample is not None else None if given else default  # --sample
        if started_on is not None and started_on.notes:
            self.state.lesson = (started_on.model or started_on.request, started_on.notes)
        self.fresh = fresh  # False: put back the saved session (the command line's `attn-tui` does)
        self.max_memory = max_memory  # bytes a computation may take; None: the default share
        self.play_interval = play_interval
        self.torch_ready = False
        self.navigation = Navigation(self)
        self.writing = Writing(self, self.navigation)
        self.editing = Editing(self)
        self.comparing = Comparing(self, partial(atlas_shows_b, self), partial(atlas_drops_b, self))
        self.atlas_link = AtlasLink(self, self.comparing)
        self.exporting = Exporting(self, self.editing.save_soon)  # the folder of an export is kept in the session
        self._release_signals: Callable[[], None] = lambda: None
        self.warmup = Warmup()
        self.set_reactive(AttnApp.language, i18n.language())

    # ----- layout and start-up -------------------------------------------------------------
    def get_default_screen(self) -> Screen[Any]:
        return MainScreen(id="_default")

    def compose(self) -> ComposeResult:
        self.warmup.begin()  # here, not earlier: the terminal driver has opened its own native modules
        for name, on in screen_classes(self.size.width, self.size.height).items():
            self.screen.set_class(on, name, update=False)  # before the panes are styled: a later change restyles all
        with Horizontal(id="main"):
            with Vertical(id="left"):
                yield ModelPane(self.variants.settings, applicable(self.variants), id="model")
                yield InputPane(id="inputs")
            yield Explorer(self.state.whereabouts, id="right")
        yield Static(self._too_small_text(), id="too-small")
        yield LocalFooter()

    @staticmethod
    def _too_small_text() -> str:
        return _("terminal too small\nattn-tui needs at least {w}×{h}").format(w=MIN_SIZE[0], h=MIN_SIZE[1])

    @property
    def explorer(self) -> Explorer:
        return self.query_one(Explorer)

    @property
    def model_pane(self) -> ModelPane:
        return self.query_one(ModelPane)

    @property
    def input_pane(self) -> InputPane:
        return self.query_one(InputPane)

    # What the state holds, read by the panes' code and the tests.
    @property
    def variants(self) -> VariantAsk:
        """The variants' ask: the one asked now, or the one kept while a model is shown."""
        return self.state.variants

    @property
    def wanted(self) -> Ask:
        """What the user asks for now (may be in flight, or invalid)."""
        return self.state.wanted

    @property
    def comparison(self) -> Comparison | None:
        return self.state.comparison

    @property
    def trace(self) -> Trace | None:
        """The trace on show (None until the first computation succeeds): a decode's steps so far while it is
        being made, so that what a key reads or exports is what the explorer draws."""
        shown = self.state.growing or self.shown
        return None if shown is None else shown.trace

    @property
    def view(self) -> StageView | None:
        """The stage view on show: what the heatmap draws and the inspector explains."""
        return self.explorer.view

    @property
    def cursor(self) -> tuple[int, int]:
        return self.explorer.heatmap.cursor

    def on_mount(self) -> None:
        served.guard(self)  # under `attn-tui serve`: ends with serve and on SIGTERM (the driver has started)
        self.explorer.language = self.language
        if not self.fresh:
            self.editing.restore_session()
        self.editing.show_ask(self.state.wanted)
        self.explorer.heatmap.focus()
        if self.notice is not None:
            self.notify(self.notice, timeout=12)
        self._fit_screen(self.size.width, self.size.height)
        if not self.is_headless:  # a test's event loop keeps its own signal handling
            self._release_signals = catch_ending_signals(self.end_on_signal)
        # After the first frame is painted: torch's import holds the GIL for seconds and would delay it.
        self.call_after_refresh(self._load_torch)

    def on_unmount(self) -> None:
        self._release_signals()
        self.editing.save_session()  # what save_soon took and has not written yet

    def end_on_signal(self, signum: int) -> None:
        """SIGTERM or SIGHUP (the terminal closed): write the session as the panes hold it now, drop the partial
        file of an export still being written, and leave as `q` does."""
        from attn_tui.io.files import remove_partials

        self.editing.save_now()
        remove_partials()
        end_within(SHUTDOWN_GRACE, exit_code(signum))  # a closed terminal can block the shutdown's last writes
        self.exit(exit_code(signum), return_code=exit_code(signum))

    def notify(self, message: str | Msg, *, markup: bool = False, **options: Any) -> None:
        """Notifications carry user text (sample notes, model paths, errors): never read as markup, and drawn
        through `printable` (a path or token that holds ESC would otherwise reach the terminal)."""
        if isinstance(options.get("title"), str):
            options["title"] = printable(options["title"])
        super().notify(printable(str(message)), markup=markup, **options)

    def action_toggle_language(self) -> None:
        self.language = "ko" if self.language == "en" else "en"

    def watch_language(self, language: str) -> None:
        """Every pane, the footer and the error line read their words again in the new language."""
        i18n.set_language(language)
        self.model_pane.relabel()
        self.input_pane.relabel()
        if self.shown is not None and self.state.on_record:
            self.input_pane.show_model_tokens(self.shown.trace)  # relabel drew the variants' tokens
        self.query_one(LocalFooter).refresh(recompose=True)
        self.query_one("#too-small", Static).update(self._too_small_text())
        self.explorer.language = language
        self.explorer.show_error(self.error)
        self.editing.save_soon()

    def on_resize(self, event: events.Resize) -> None:
        self._fit_screen(event.size.width, event.size.height)

    def _fit_screen(self, width: int, height: int) -> None:
        set_classes(self.screen, screen_classes(width, height))

    @work(thread=True, exclusive=True, group="torch", description="torch")
    def _load_torch(self) -> None:
        start = time.perf_counter()
        try:
            import attn_tui.attention.engine
            import attn_tui.explain.cell  # noqa: F401  (torch, and the engine on top of it)
        except Exception as exc:
            self.post_message(TorchFailed(str(Msg("torch could not be imported: {reason}", reason=exc))))
            return
        self.post_message(TorchReady(time.perf_counter() - start))

    @while_running
    def on_torch_ready(self, message: TorchReady) -> None:
        self.torch_ready = True
        self.compute_wanted()

    @while_running
    def on_torch_failed(self, message: TorchFailed) -> None:
        self.warmup.end()
        self.show_error([message.error])
        self.explorer.waiting(_("torch could not be imported: nothing can be computed"))

    # ----- computing: one path for every source --------------------------------------------
    def ask(self, ask: Ask) -> None:
        """Ask for `ask`: remember it as its source's latest, and compute it.

        Leaving the recorded trace (an edit while it is on show) keeps it on the undo stack: it cannot be
        computed again, the user's code made it."""
        if self.state.ask(ask):
            self.notify(_("the recorded trace is set aside: ctrl+z brings it back"), timeout=6)
        self.editing.show_applicable()
        self.compute_wanted()

    def compute_wanted(self) -> None:
        if not self.torch_ready:
            return
        wanted, generation = self.state.send()
        loading = self.state.loading(wanted)
        self.explorer.heatmap.loading = loading is not None
        self.model_pane.show_status(_("loading {model}…").format(model=loading) if loading else "")
        self.explorer.waiting(_("opening {model}: the model pane says how far").format(model=loading) if loading
                              else _("computing…"))
        self._compute(wanted, generation)

    @work(thread=True, exclusive=True, group="compute", description="compute")
    def _compute(self, ask: Ask, generation: int) -> None:
        from attn_tui.errors import AttnError, describe
        from attn_tui.sources import run

        try:
            served.check_ask(ask)
            shown = run(ask, self.max_memory, cpu_fallback=True, on_step=post_growth(self, generation),
                        on_progress=self.progress_listener(generation))
            self.post_message(TraceReady(generation, shown))
        except SupersededError:
            return  # a newer ask is being computed
        except AttnError as exc:
            self.post_message(ComputeFailed(generation, ask, exc.message))
        except Exception as exc:
            self.post_message(ComputeFailed(generation, ask, describe(exc)))

    def progress_listener(self, generation: int) -> Callable[[Progress], None]:
        """What the compute worker tells the phases of a load to (a test holds a load at a phase here)."""
        return post_progress(self, generation)

    @while_running
    def on_load_progressed(self, message: LoadProgressed) -> None:
        """A load's phase under the model's status, while that load is still the one wanted and under way."""
        if message.generation == self.state.generation and self.explorer.heatmap.loading:
            self.model_pane.show_progress(message.progress)
            self.explorer.waiting(str(message.progress.what))

    @while_running
    def on_trace_grew(self, message: TraceGrew) -> None:
        """The first steps of a decode are shown while the rest are made; where the user is stays put. What is
        on show (`shown`: undo, export, compare, the session) changes only with the whole trace."""
        first = self.state.grew_to(message.generation, message.shown)
        if first is None:
            return  # a stale ask's steps; compare mode waits for the whole of A
        explorer, model = self.explorer, message.shown.ask.model
        if first and model is not None and (self.shown is None or source_key(self.shown.ask) != model.name):
            explorer.layer_index, explorer.head = model.layer, model.head  # a model's own first place, as watch_shown
        explorer.heatmap.loading = False
        first_stage = self.state.first_stage
        explorer.lesson = self.state.lesson_for(message.shown.ask)
        explorer.show(message.shown, first_stage)
        if first_stage is not None and all(p.name != first_stage for p in explorer.places):
            explorer.forget_place()  # the stage asked for comes later (the alignment): unless the user moves, go there
        self.model_pane.show_status(str(Plural("decoding… {n} step so far", "decoding… {n} steps so far",
                                                         n=message.steps_ready)))

    @while_running
    def on_trace_ready(self, message: TraceReady) -> None:
        if self.state.result_arrived(message.generation, message.shown):  # else a newer ask is on its way
            self.shown = message.shown

    def watch_shown(self, old: Shown | None, shown: Shown | None) -> None:
        if shown is None:
            return
        self.settled(shown.ask)
        trace, model = shown.trace, shown.ask.model
        if model is not None:
            self.model_pane.show_status(
                (_("✓ {model}, {layers}×{heads} heads").format(model=trace.meta.title, layers=trace.layers,
                                                               heads=trace.heads) if trace.layers > 1
                 else _("✓ {n} decoder steps").format(n=trace.steps())) + probe_note(model))
        explorer = self.explorer
        if model is not None and (old is None or source_key(old.ask) != model.name) \
                and self.state.grew != self.state.shown_generation:  # its first steps took the model's place already
            explorer.layer_index, explorer.head = model.layer, model.head  # a model's own first place
        if self.comparison is not None and not self.comparison.fits(shown.ask):
            self.comparing.end_compare()  # A is now something the change does not apply to
        explorer.lesson = self.state.lesson_for(shown.ask)  # a sample's own words, while it is what is on show
        explorer.show(shown, self.state.first_stage)
        rows = recorded_rows(trace)  # the user's code: what ran, not the variants' knobs nor their sentence
        self.model_pane.show_recorded(rows)
        if rows is not None:
            self.input_pane.show_model_tokens(trace)
        self.state.first_stage = None
        self.show_error(said_of(shown))
        if shown.notice:
            self.notify(shown.notice, title=_("CUDA not available"), severity="warning", timeout=10)
        self.show_pane_view()
        if self.comparison is not None:
            self.comparing.compute_b()
        self.editing.save_soon()
        self.writing.keep_writing(shown)  # `N`: one more token
        self.atlas_link.a_arrived(shown)  # an atlas open on the probe (or back on the sentence) reads the new run

    @while_running
    def on_compute_failed(self, message: ComputeFailed) -> None:
        failure = self.state.failed(message.generation, message.ask, message.error)
        if failure is None:
            return  # a newer ask is on its way
        self.settled(message.ask)
        self.back_to_shown()
        self.explorer.show_error(self.state.error)
        self.explorer.waiting(_("nothing computed: the line above says why"))  # only while nothing is on show
        if failure.model is not None:
            self.model_pane.show_status(_("✗ could not open {model}").format(model=failure.model[:40])
                                                  if failure.unopened else "")
        if failure.unopened and failure.model is not None and failure.back is not None:
            # A model that cannot be opened: say so loudly and go back to what was shown.
            self.notify(message.error, title=_("cannot open {model}").format(model=failure.model[:60]),
                        severity="error", timeout=10)
            self.model_pane.refuse_path(failure.model)
            self.editing.show_ask(failure.back, matrices=False)
            if failure.recompute:
                self.compute_wanted()

    def stop_computing(self) -> None:
        """The ask in flight is dropped: its worker stops at its next step."""
        self.workers.cancel_group(self, "compute")

    def back_to_shown(self) -> None:
        """The steps of a decode that failed or was dropped go: the last whole result is drawn again."""
        if self.state.growing is None and self.shown is not None and self.explorer.shown is not self.shown:
            self.explorer.show(self.shown)

    def settled(self, ask: Ask) -> None:
        """A computation ended: the loading indicator goes (and, once painted, start-up is over)."""
        self.call_after_refresh(self.warmup.end)
        self.explorer.heatmap.loading = False
        self.model_pane.show_progress(None)
        if ask.model is None:
            self.model_pane.show_status("")

    def show_error(self, parts: list[str | Msg], joiner: str = " · ") -> None:
        """The explorer's error line, kept as its parts so that `t` reads it again in the other language."""
        self.state.set_error(parts, joiner)
        self.explorer.show_error(self.state.error)

    @property
    def error(self) -> str:
        return self.state.error

    def show_pane_view(self) -> None:
        """The model pane's head (and layer) line and the device the trace ran on."""
        trace, explorer = self.trace, self.explorer
        if trace is None:
            return
        pane = self.model_pane
        pane.show_view(explorer.head, trace.heads_at(explorer.layer_index), f"{trace.device} · {trace.dtype}")
        pane.show_layer(explorer.layer_index, trace.layers)
        if self.state.wanted.model is not None:
            self.input_pane.show_model_tokens(trace)

    def on_panel_changed(self, message: PanelChanged) -> None:
        self.query_one("#main").set_class(message.full_width, "-full")


def run_app(request: VariantAsk | None = None, model: ModelAsk | None = None, fresh: bool = False,
            **options: Any) -> int:
    """Run the app on `request` (None: the saved session, else the default sample) or on `model`, with AttnApp's
    other `options` (max_memory, first_stage, record, notice, sample); the exit code."""
    result = AttnApp(request, model=model, fresh=fresh, **options).run()
    return 0 if result is None else int(result)
