"""The app's state without Textual: every transition driven directly, no Pilot, no terminal.

The results handed to the state are real ones, computed through the one door (`sources.run`),
so what the state keeps and drops is what the app would keep and drop.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from attn_tui.ask.samples import MODEL_SENTENCE
from attn_tui.ask.settings import MatrixInput, ModelAsk, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.io.session import load, save
from attn_tui.present.compare import comparisons
from attn_tui.trace.shown import Shown
from attn_tui.tui.state import (
    OWN,
    STILL_SHOWN,
    UNDO_DEPTH,
    AppState,
    Snapshot,
    Typed,
    session_ask,
    session_typed,
    source_key,
)

ROOT = Path(__file__).resolve().parents[2]
A = VariantAsk(SentenceInput("the cat sat"), Settings(variant="scaled_dot"))
B = VariantAsk(SentenceInput("the cat sat"), Settings(variant="dot"))
QKV = VariantAsk(MatrixInput([[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0, 2.0], [3.0, 4.0]]), Settings(mask="causal"))


@pytest.fixture(scope="module")
def shown() -> dict[str, Shown]:
    """Real results of A and B, computed as the app's worker computes them."""
    from attn_tui.sources import run

    return {"a": run(A, None), "b": run(B, None)}


class Pane:
    """What the input pane holds, as the App's `typed` reads it."""

    def __init__(self) -> None:
        self.typed = Typed("the cat sat", {"Q": "1 0"}, "tab-sentence")

    def __call__(self) -> Typed:
        return self.typed


def sent(state: AppState, ask: VariantAsk | ModelAsk) -> int:
    """Ask for `ask` and send it to the worker, as an edit does; its generation."""
    state.ask(ask)
    asked, generation = state.send()
    assert asked is ask
    return generation


# ----- generations: a stale result or error is dropped ------------------------------------------------------
def test_a_result_of_an_older_ask_is_dropped_and_the_latest_is_shown(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    first = sent(state, A)
    second = sent(state, B)
    assert second == first + 1 and not state.settled
    assert state.result_arrived(first, shown["a"]) is False
    assert state.shown is None and not state.settled
    assert state.result_arrived(second, shown["b"]) is True
    assert state.shown is shown["b"] and state.settled


def test_an_error_of_an_older_ask_is_dropped(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    first = sent(state, A)
    second = sent(state, B)
    assert state.failed(first, A, "late") is None
    assert state.error == "" and not state.settled
    assert state.result_arrived(second, shown["b"])


def test_an_error_keeps_the_last_result_and_says_so(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    state.result_arrived(sent(state, A), shown["a"])
    failure = state.failed(sent(state, B), B, "nan in the scores")
    assert failure is not None and not failure.unopened and failure.model is None
    assert failure.parts == ["✗ ", "nan in the scores", STILL_SHOWN]
    assert state.error == "✗ nan in the scores" + str(STILL_SHOWN)
    assert state.shown is shown["a"] and state.settled and state.wanted is B  # what was typed stays asked


def test_an_edit_that_cannot_be_asked_drops_what_is_in_flight(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    in_flight = sent(state, A)
    parts = state.rejected("dim must be a whole number")
    assert parts == ["✗ ", "dim must be a whole number"]  # nothing shown yet: no "showing the last" note
    assert state.settled
    assert state.result_arrived(in_flight, shown["a"]) is False  # asked with a value no longer on screen
    assert state.clear_rejection() and state.error == ""
    assert not state.clear_rejection()  # nothing rejected now


def test_steps_of_a_decode_in_flight_go_with_it_when_an_edit_is_refused(shown: dict[str, Shown]) -> None:
    """A decode shows its first steps while it is made; an edit that cannot be asked drops it, its steps too,
    so what is drawn again is the last whole result, not a decode nobody waits for any more."""
    state = AppState(A)
    state.result_arrived(sent(state, A), shown["a"])
    decoding = sent(state, B)
    assert state.grew_to(decoding, shown["b"]) is True  # the first steps of this ask: shown
    assert state.grew_to(decoding, shown["b"]) is False  # more of them
    assert state.growing is shown["b"]
    state.rejected("dim must be a whole number")
    assert state.growing is None and state.shown is shown["a"]
    assert state.grew_to(decoding, shown["b"]) is None  # a later step of the dropped decode is stale


# ----- models that cannot open ----------------------------------------------------------------------------
def test_a_model_that_never_opened_goes_back_to_what_was_shown(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    state.result_arrived(sent(state, A), shown["a"])
    broken = ModelAsk("/no/such/model", "a b")
    assert state.loading(broken) == "/no/such/model"
    failure = state.failed(sent(state, broken), broken, "not found")
    assert failure is not None and failure.unopened and failure.model == "/no/such/model"
    assert failure.back is A and state.wanted is A and not failure.recompute
    assert "/no/such/model" not in state.kept


def test_a_model_that_never_opened_with_nothing_shown_computes_the_variants() -> None:
    state = AppState(A, ModelAsk("/no/such/model", "a b"))
    generation = state.send()[1]
    failure = state.failed(generation, state.wanted, "not found")
    assert failure is not None and failure.back is A and failure.recompute and state.wanted is A


def test_a_loaded_model_that_fails_stays_asked(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    model = ModelAsk("minilm", "a b")
    state.loaded_models.add("minilm")
    assert state.loading(model) is None
    failure = state.failed(sent(state, model), model, "too long")
    assert failure is not None and not failure.unopened and failure.back is None and state.wanted is model


def test_a_models_result_marks_it_loaded(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    model = ModelAsk("minilm", "the cat sat")
    generation = sent(state, model)
    state.result_arrived(generation, Shown(model, shown["a"].trace))
    assert state.loaded_models == {"minilm"} and state.loading(model) is None


# ----- undo -----------------------------------------------------------------------------------------------
def test_undo_brings_back_the_previous_ask_and_what_was_typed() -> None:
    pane = Pane()
    state = AppState(A, typed=pane)
    state.push_undo()
    pane.typed = Typed("something else", {}, "tab-matrices")
    state.ask(QKV)
    snapshot = state.undo()
    assert snapshot == Snapshot(A, Typed("the cat sat", {"Q": "1 0"}, "tab-sentence"), A)
    assert state.kept[OWN] is A
    state.ask(snapshot.wanted)  # as the App does, once the panes show it
    assert state.wanted is A and state.variants is A
    assert state.undo() is None  # nothing more to undo


def test_undo_keeps_the_last_twenty() -> None:
    state = AppState(A)
    for n in range(UNDO_DEPTH + 5):
        state.ask(replace(A, settings=replace(A.settings, dim=n + 1)))
        state.push_undo()
    dims = [s.variants.settings.dim for s in state.undo_stack]
    assert len(dims) == UNDO_DEPTH and dims[-1] == UNDO_DEPTH + 5 and dims[0] == 6


def test_an_edit_sets_the_recorded_trace_aside_and_undo_shows_it_again(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    recorded = Shown(A, shown["a"].trace)
    generation = state.show_recorded(recorded)
    assert state.result_arrived(generation, recorded) and state.on_record
    assert state.ask(B) is True  # set aside: it cannot be computed again
    state.result_arrived(state.send()[1], shown["b"])
    assert not state.on_record and state.ask(A) is False and len(state.undo_stack) == 1
    snapshot = state.undo()
    assert snapshot is not None and snapshot.recorded is recorded and snapshot.wanted is A
    again = state.show_recorded(snapshot.recorded)
    assert state.result_arrived(again, recorded) and state.on_record and state.settled


# ----- switching source -----------------------------------------------------------------------------------
def test_switching_source_restores_the_kept_ask() -> None:
    state = AppState(A)
    minilm = state.switch_source("minilm", "a dog ran")
    assert minilm == ModelAsk("minilm", "a dog ran", device=A.settings.device)
    assert state.kept[OWN] == replace(A, source=SentenceInput("a dog ran"))  # the sentence typed goes with it
    state.ask(replace(minilm, layer=2, head=3))
    assert source_key(state.wanted) == "minilm" and state.variants == state.kept[OWN]
    back = state.switch_source(None, "a dog sat")
    assert back is state.kept[OWN]
    state.ask(back)
    again = state.switch_source("minilm", "a dog sat")
    assert again == ModelAsk("minilm", "a dog sat", layer=2, head=3)  # its layer and head kept, the text typed


def test_a_date_model_starts_on_its_date_and_typed_matrices_give_a_sentence() -> None:
    state = AppState(QKV)
    assert state.switch_source("dates_rnn", "ignored", first_text="1999-12-31").model == ModelAsk(
        "dates_rnn", "1999-12-31")
    assert state.kept[OWN] is QKV  # typed matrices: the sentence field is not theirs
    model = state.switch_source("minilm", "typed for the sentence tab").model
    assert model is not None and model.text == MODEL_SENTENCE


def test_a_rejected_source_goes_back_to_the_input_on_show(shown: dict[str, Shown]) -> None:
    state = AppState(A)
    state.result_arrived(sent(state, A), shown["a"])
    half_typed = VariantAsk(SentenceInput("the cat"), A.settings)
    in_flight = sent(state, half_typed)
    assert state.source_rejected("Q: row 2 has 1 number, row 1 has 2")
    assert state.variants.source == A.source and state.wanted == state.kept[OWN]
    assert state.result_arrived(in_flight, shown["a"]) is False
    state.ask(ModelAsk("minilm", "a b"))
    assert state.source_rejected("anything") is False  # a model reads the sentence: the editors feed nothing


# ----- compare mode ---------------------------------------------------------------------------------------
def test_compare_b_of_an_older_comparison_is_dropped() -> None:
    state = AppState(A)
    options = {c.key: c for c in comparisons(A, heads=2, head=0)}
    state.start_compare(options["head"])
    assert state.send_b() is None  # a head: B is the same trace at another head
    state.start_compare(options["mask"])
    b = state.send_b()
    assert b is not None
    b_ask, generation = b
    assert b_ask == replace(A, settings=replace(A.settings, mask="causal"))
    assert state.b_arrived(generation - 1) is None and state.b_arrived(generation) is options["mask"]
    state.end_compare()
    assert state.comparison is None and state.b_arrived(generation) is None


# ----- the session ----------------------------------------------------------------------------------------
def test_the_session_round_trips_through_its_file(tmp_path: Path) -> None:
    pane = Pane()
    state = AppState(A, typed=pane)
    state.ask(replace(A, custom_mask=[[1.0, 0.0, 1.0]], mask_by_hand=True))
    state.ask(ModelAsk("minilm", "the cat sat", layer=1))
    save(state.session("ko", "weights"), tmp_path / "session.json")
    session = load(tmp_path / "session.json")
    assert session is not None and session.language == "ko" and session.stage == "weights"
    again = AppState(VariantAsk(SentenceInput("fresh")))
    assert again.restore(session, session_ask(session, lambda kind: None))
    assert again.wanted == ModelAsk("minilm", "the cat sat", layer=1)
    assert again.variants == replace(A, custom_mask=[[1.0, 0.0, 1.0]], mask_by_hand=True)
    assert again.first_stage == "weights" and session_typed(session) == pane.typed


def test_a_session_of_typed_matrices_reads_them_from_the_editors(tmp_path: Path) -> None:
    x = VariantAsk(XInput([[1.0, 2.0], [3.0, 4.0]]), Settings(variant="multihead"))
    state = AppState(x, typed=lambda: Typed("", {"X": "1 2\n3 4"}, "tab-matrices"))
    session = state.session("en", None)
    assert session.source == "x" and session.model is None
    asked: list[str] = []

    def matrices(kind: str) -> XInput:
        asked.append(kind)
        return XInput([[1.0, 2.0], [3.0, 4.0]])

    request = session_ask(session, matrices)
    assert asked == ["x"] and request == x
    unreadable = session_ask(replace(session, sentence=""), lambda kind: None)
    assert unreadable.source.sentence  # editors that no longer parse: a sentence to start on


def test_a_session_waits_on_the_undo_stack_when_the_command_line_named_an_input(tmp_path: Path) -> None:
    state = AppState(A, typed=Pane())
    save(state.session("en", "scores"), tmp_path / "session.json")
    session = load(tmp_path / "session.json")
    assert session is not None
    given = AppState(B, given=True)
    assert given.restore(session, session_ask(session, lambda kind: None)) is False
    assert given.wanted is B and given.first_stage is None
    assert [s.wanted for s in given.undo_stack] == [A]


def test_the_state_imports_neither_textual_nor_torch() -> None:
    code = ("import sys, attn_tui.tui.state\n"
            "assert not {'textual', 'torch', 'rich'} & set(sys.modules), sorted({'textual', 'torch', 'rich'} "
            "& set(sys.modules))")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


def test_the_sentence_back_in_front_sets_aside_only_an_editor_s_error(shown: dict[str, Shown]) -> None:
    from attn_tui.i18n import Msg

    state = AppState(A)
    state.result_arrived(sent(state, A), shown["a"])
    assert state.source_rejected(Msg("✗ {error}", error="Q, line 2: expected a number"))
    assert state.error.startswith("✗ Q, line 2") and state.set_aside_source_error() and state.error == ""
    state.rejected(Msg("cannot open {model}", model="m"))  # any other error (a model's) stays
    assert not state.set_aside_source_error() and "cannot open m" in state.error
