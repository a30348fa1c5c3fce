"""The app's state as a plain object: what is asked, kept, undone, on show and in error, and where the user is.

The App owns one `AppState`, hands it every worker result and edit, and draws what the
transitions say. Each transition is a method that changes the state and returns what the
panes must do (a bool, an ask, or a small dataclass), so unit tests drive the whole of it
without a terminal (tests/tui/test_state.py). Nothing here imports Textual, Rich or torch.

Two generation counters keep results in order: `generation` counts the asks sent to the
worker, and a result (or error) of any other generation is stale, a newer ask is on its
way, and is dropped; `b_generation` does the same for compare mode's B.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attn_tui.ask.samples import MODEL_SENTENCE
from attn_tui.ask.settings import Ask, MatrixInput, ModelAsk, RecordAsk, SentenceInput, VariantAsk, XInput
from attn_tui.i18n import Msg
from attn_tui.present.atlas import AtlasPosition
from attn_tui.tui.whereabouts import Whereabouts

if TYPE_CHECKING:
    from attn_tui.io.session import Session
    from attn_tui.present.compare import Comparison
    from attn_tui.trace.shown import Shown

OWN = ""  # the key of the attention variants among the kept asks
UNDO_DEPTH = 20
STILL_SHOWN = Msg("  (showing the last valid result)")
SESSION_SENTENCE = "나는 학교에 간다"  # what a saved session without a usable input starts on


def source_key(ask: Ask) -> str:
    """Which source an ask belongs to: a model's name, or OWN for the attention variants."""
    model = ask.model
    return OWN if model is None else model.name


@dataclass(frozen=True)
class Typed:
    """Everything typed in the input pane, exactly as typed: what undo restores and the session keeps."""

    sentence: str
    editors: dict[str, str]
    tab: str


@dataclass(frozen=True)
class Snapshot:
    """What undo puts back: the variants' ask, what was typed, the ask, and a trace that cannot be asked for
    again (a recorded one) when that was on show."""

    variants: VariantAsk
    typed: Typed
    wanted: Ask
    recorded: Shown | None = None


@dataclass(frozen=True)
class Failure:
    """What the panes do about a failed ask that is still the one wanted."""

    parts: list[str | Msg]  # the error line
    model: str | None = None  # the model that failed, when one did
    unopened: bool = False  # that model never opened: say so loudly, and go back to `back`
    back: Ask | None = None  # the ask now wanted again (shown in the panes)
    recompute: bool = False  # nothing is on show: `back` must be computed


class AppState:
    """The asks, their results and errors, undo, compare mode's B, where the user is, and the session's content."""

    def __init__(self, variants: VariantAsk, model: ModelAsk | RecordAsk | None = None, *, given: bool = False,
                 first_stage: str | None = None, typed: Callable[[], Typed] | None = None) -> None:
        self.wanted: Ask = model or variants  # what the user asks for now (in flight, or invalid)
        self.kept: dict[str, Ask] = {OWN: variants}  # the last ask of each source, restored on a switch
        self.given = given  # the command line named what to show: a saved session only goes onto the undo stack
        self.first_stage = first_stage  # where the next trace opens (None: where the user was)
        self.typed = typed or (lambda: Typed("", {}, "tab-sentence"))  # reads what the input pane holds
        self.undo_stack: list[Snapshot] = []
        self.generation = 0  # of the latest ask sent to the worker
        self.shown_generation = 0  # of the latest result (trace or error) handled
        self.b_generation = 0  # of the latest B asked for in compare mode
        self.shown: Shown | None = None  # the result on show
        self.grew = 0  # of the latest ask whose first steps were shown while it was being computed
        self.growing: Shown | None = None  # those steps so far, until the whole trace (or an error) arrives
        self.recorded_shown: Shown | None = None  # the recorded trace as shown: undo brings it back after an edit
        self.loaded_models: set[str] = set()  # names that loaded once: no loading indicator again
        self.error_parts: list[str | Msg] = []  # the error line, kept as messages so `t` translates it
        self.error_joiner = " · "
        self.source_error = False  # the error line holds an input editor's error
        self.comparison: Comparison | None = None
        self.atlas = AtlasPosition()  # where the head atlas (a) was left: cursor, role filter, ranking, compare
        self.whereabouts = Whereabouts()  # where the user is in the trace on show: place, layer, head, cursor…
        self.lesson: tuple[Ask, str] | None = None  # a sample's ask and its notes' words (msgid), said while on show
        self.export_folder = ""  # where the last export went, the dialog's next offer ("": the folder started in)

    def lesson_for(self, ask: Ask) -> str:
        """The words of the sample that made `ask` (what of its note carries over), "" once anything changed."""
        return self.lesson[1] if self.lesson is not None and self.lesson[0] == ask else ""

    # ----- what is asked ---------------------------------------------------------------------
    @property
    def variants(self) -> VariantAsk:
        """The variants' ask: the one asked now, or the one kept while a model is asked for."""
        request = self.wanted.request or self.kept[OWN].request
        assert request is not None  # OWN holds the variants' ask, always
        return request

    @property
    def settled(self) -> bool:
        """The latest ask's result (or error) has been handled."""
        return self.shown_generation == self.generation

    @property
    def on_record(self) -> bool:
        """The recorded trace is on show: it cannot be computed again."""
        return self.shown is not None and self.shown is self.recorded_shown

    def ask(self, ask: Ask) -> bool:
        """Ask for `ask`: it is wanted now and its source's latest. True: the recorded trace on show was set
        aside onto the undo stack (the user's code made it; it cannot be computed again)."""
        set_aside = self.on_record
        if set_aside:
            self.push_undo(self.recorded_shown)
        self.wanted = ask
        self.kept[source_key(ask)] = ask
        return set_aside

    def keep_variants(self, request: VariantAsk) -> None:
        """The variants' ask is wanted now but not computed (it cannot run, or it is what is on show already)."""
        self.kept[OWN] = self.wanted = request

    def send(self) -> tuple[Ask, int]:
        """The wanted ask goes to the worker: it and its generation (any older one in flight is now stale)."""
        self.generation += 1
        return self.wanted, self.generation

    def loading(self, ask: Ask) -> str | None:
        """The model that must load before `ask` shows (None: nothing new to load)."""
        model = ask.model
        return model.name if model is not None and model.name not in self.loaded_models else None

    def drop_in_flight(self) -> None:
        """What is in flight was asked with a value no longer on screen: its result, and the steps of it shown
        so far, are dropped (the last whole result is what is on show again)."""
        self.generation += 1
        self.shown_generation = self.generation
        self.growing = None

    def stop_growing(self) -> Shown | None:
        """A model writing in flight is stopped: the steps shown so far become what is on show, asked as the
        tokens written (so `n` goes on from there). None: nothing is being written."""
        growing = self.growing
        model = None if growing is None else growing.ask.model
        if growing is None or model is None or self.settled or not model.generate:
            return None
        model = replace(model, generate=growing.trace.steps())
        kept = replace(growing, ask=model)
        self.drop_in_flight()
        self.wanted = self.kept[source_key(model)] = model
        self.shown = kept
        return kept

    # ----- results ------------------------------------------------------------------------
    def result_arrived(self, generation: int, shown: Shown) -> bool:
        """A trace came back: True when it is shown; False when it is stale (a newer ask is on its way)."""
        if generation != self.generation:
            return False
        self.shown_generation = generation
        self.shown, self.growing = shown, None
        if not shown.ask.from_panes:  # the user's code: an edit sets it aside, undo brings back this very trace
            self.recorded_shown = shown
        model = shown.ask.model
        if model is not None:
            self.loaded_models.add(model.name)
        return True

    def grew_to(self, generation: int, shown: Shown) -> bool | None:
        """A trace still being made gained a step (`shown`: the steps so far). None: it is stale, or compare mode
        waits for the whole of A; else True when these are the first steps of this ask shown."""
        if generation != self.generation or self.comparison is not None:
            return None
        first = self.grew != generation
        self.grew, self.growing = generation, shown
        return first

    def show_recorded(self, shown: Shown) -> int:
        """A recorded trace is shown as it is, never computed: the generation to post it under."""
        self.recorded_shown = shown
        self.wanted = shown.ask
        self.generation += 1
        return self.generation

    def failed(self, generation: int, ask: Ask, error: str | Msg) -> Failure | None:
        """An ask failed: None when it is stale; else the error line and, for a model that never opened, the ask
        that is wanted again (what was on show, or the variants)."""
        if generation != self.generation:
            return None
        self.shown_generation, self.growing = generation, None
        parts: list[str | Msg] = ["✗ ", error, *([STILL_SHOWN] if self.shown else [])]
        self.set_error(parts, "")
        model = ask.model
        if model is None:
            return Failure(parts)
        if model.name in self.loaded_models:
            return Failure(parts, model.name)
        self.kept.pop(model.name, None)
        back = self.shown.ask if self.shown is not None else self.kept[OWN]
        self.wanted = back
        return Failure(parts, model.name, unopened=True, back=back, recompute=self.shown is None)

    def rejected(self, error: str | Msg, prefix: str = "✗ ") -> list[str | Msg]:
        """An edit the panes cannot turn into an ask: what is in flight is dropped, the last result stays, and the
        error line (returned) says so."""
        self.drop_in_flight()
        parts: list[str | Msg] = [*([prefix] if prefix else []), error, *([STILL_SHOWN] if self.shown else [])]
        self.set_error(parts, "")
        return parts

    def source_rejected(self, error: str | Msg) -> bool:
        """An input editor holds an error. False: a model is asked for and reads the sentence, the editors feed
        nothing now. Else what was asked but dropped is no longer what edits start from: the input on show is."""
        if self.wanted.model is not None:
            return False
        self.drop_in_flight()
        shown = self.shown.ask.request if self.shown is not None else None
        if shown is not None and shown.source != self.variants.source:
            self.keep_variants(replace(self.variants, source=shown.source, custom_mask=shown.custom_mask))
        self.set_error([error, *([STILL_SHOWN] if self.shown else [])], "")
        self.source_error = True
        return True

    def said_of_shown(self) -> list[str | Msg]:
        return said_of(self.shown)

    def set_aside_source_error(self) -> bool:
        """The sentence is back in front: an editor's error (and only that) leaves the error line; True when it
        did."""
        if not self.source_error:
            return False
        self.set_error(self.said_of_shown())
        return True

    def set_error(self, parts: list[str | Msg], joiner: str = " · ") -> None:
        self.error_parts, self.error_joiner = list(parts), joiner
        self.source_error = False  # the line says something else now

    @property
    def error(self) -> str:
        """The error line in the language now set."""
        return self.error_joiner.join(str(p) for p in self.error_parts)

    def clear_rejection(self) -> bool:
        """An edit became valid again: True when the error line showed a rejection (it goes back to the
        warnings of the trace on show)."""
        if self.error_parts[:1] != ["✗ "]:
            return False
        self.set_error(self.said_of_shown())
        return True

    # ----- undo ---------------------------------------------------------------------------
    def push_undo(self, recorded: Shown | None = None) -> None:
        """Keep what is there for ctrl+z; `recorded`: a result that cannot be asked for again."""
        self.keep_for_undo(Snapshot(self.variants, self.typed(), recorded.ask if recorded else self.wanted,
                                    recorded))

    def keep_for_undo(self, snapshot: Snapshot) -> None:
        self.undo_stack.append(snapshot)
        del self.undo_stack[:-UNDO_DEPTH]

    def undo(self) -> Snapshot | None:
        """ctrl+z: the last snapshot, its variants' ask kept again (None: nothing to undo). The App puts it into
        the panes, then asks for `wanted`, or shows `recorded` again (`show_recorded`)."""
        if not self.undo_stack:
            return None
        snapshot = self.undo_stack.pop()
        self.kept[OWN] = snapshot.variants
        return snapshot

    # ----- switching source -------------------------------------------------------------------
    def switch_source(self, name: str | None, sentence: str, first_text: str | None = None) -> Ask:
        """The ask for model `name` (None: the variants): its kept ask, or a new one on `first_text` (a date
        model's date) or the sentence typed. What the current source reads is kept for the way back."""
        current = self.wanted
        model, request = current.model, current.request
        if model is not None:
            self.kept[model.name] = replace(model, text=sentence)
        elif request is not None and request.source.sentence is not None:
            self.kept[OWN] = replace(request, source=SentenceInput(sentence))
        if name is None:
            return self.kept[OWN]
        kept = self.kept.get(name)
        if kept is not None and kept.model is not None:
            return kept.model
        variants = self.variants
        text = first_text if first_text is not None else (
            sentence if variants.source.sentence is not None else MODEL_SENTENCE)
        return ModelAsk(name, text, device=variants.settings.device)

    # ----- compare mode -------------------------------------------------------------------
    def start_compare(self, comparison: Comparison) -> None:
        self.comparison = comparison

    def end_compare(self) -> None:
        """Leave compare mode: whatever B is in flight is no longer wanted."""
        self.comparison = None
        self.b_generation += 1

    def send_b(self) -> tuple[Ask, int] | None:
        """B's ask and its generation; None when a head or layer comparison needs no computing."""
        comparison = self.comparison
        if comparison is None or comparison.same_trace:
            return None
        self.b_generation += 1
        return comparison.b_ask(self.wanted), self.b_generation

    def b_arrived(self, generation: int) -> Comparison | None:
        """B came back: the comparison it belongs to, or None when it is stale."""
        return self.comparison if generation == self.b_generation else None

    # ----- the session kept between runs ---------------------------------------------------
    def session(self, language: str, stage: str | None) -> Session:
        """What the session file keeps of this state and the panes (the file's format is io/session.py's)."""
        from attn_tui.io.session import Session

        request, typed = self.variants, self.typed()
        return Session(request.settings, request.source.kind, typed.sentence, typed.editors, request.custom_mask,
                       self.wanted.model, language, stage, request.mask_by_hand, self.export_folder)

    def restore(self, session: Session, request: VariantAsk) -> bool:
        """Put back a saved session whose input reads as `request`. False: the command line named what to show,
        so the saved session waits on the undo stack (ctrl+z) instead."""
        wanted = session.model or request
        self.export_folder = session.export_folder  # the user's choice of folder, whatever is shown
        if self.given:
            self.keep_for_undo(Snapshot(request, session_typed(session), wanted))
            return False
        self.kept[OWN] = request
        self.wanted = wanted
        self.first_stage = session.stage
        return True


def said_of(shown: Shown | None) -> list[str | Msg]:
    """What the error line says of a result on show: its warnings and its notice (the CPU fallback)."""
    return [] if shown is None else [*shown.trace.warnings, *([shown.notice] if shown.notice else [])]


def session_typed(session: Session) -> Typed:
    """What the input pane held when the session was saved."""
    return Typed(session.sentence, session.editors, "tab-matrices" if session.source != "sentence"
                 else "tab-sentence")


def session_ask(session: Session, matrices: Callable[[str], MatrixInput | XInput | None]) -> VariantAsk:
    """The variants' ask a saved session holds; `matrices(kind)` reads the restored editors' typed matrices
    ('x' or 'qkv'; None when they do not parse), and a session without a usable input reads a sentence."""
    source: SentenceInput | MatrixInput | XInput | None = None
    if session.source != "sentence":
        source = matrices("x" if session.source == "x" else "qkv")
    if source is None:
        source = SentenceInput(session.sentence or SESSION_SENTENCE)
    return VariantAsk(source, session.settings, session.custom_mask, session.mask_by_hand)


__all__ = ["OWN", "AppState", "Failure", "Snapshot", "Typed", "session_ask", "session_typed",
           "source_key"]
