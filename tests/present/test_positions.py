"""Where the arrows go: one position per stage, or per stage and decoder step for a seq2seq decode."""

from __future__ import annotations

import torch

from attn_tui.ask.settings import Settings
from attn_tui.present.positions import Position as P  # noqa: N817  (short, the tables read as tables)
from attn_tui.present.positions import bar_window, positions, same_place
from attn_tui.trace.meta import VariantRun
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Axis, Stage, Trace


def _trace(names_by_step: list[list[str]], after: list[str]) -> Trace:
    trace = Trace(VariantRun(settings=Settings()), ("a",), ("a",), "cpu", "float32")
    places = [Place(n, step=t) for t, names in enumerate(names_by_step) for n in names]
    for place in places + [Place(n) for n in after]:
        trace.add(Stage(place, torch.zeros(1), "", (Axis("dim", ("d0",)),)))
    return trace


def test_a_single_attention_has_one_position_per_stage() -> None:
    trace = _trace([], ["query", "key", "weights"])
    places = positions(trace)
    assert places == [P("query", None), P("key", None), P("weights", None)]
    assert bar_window(places, 1) == [0, 1, 2]


def test_a_decode_runs_step_by_step_and_ends_on_the_alignment() -> None:
    trace = _trace([["query", "weights"]] * 3, ["alignment"])
    places = positions(trace)
    assert places == [P("query", 0), P("weights", 0), P("query", 1), P("weights", 1), P("query", 2), P("weights", 2),
                      P("alignment", None)]
    assert bar_window(places, 3) == [2, 3, 6]  # step 1's stages, then the alignment
    assert bar_window(places, 6) == [4, 5, 6]  # on the alignment: the last step's


def test_the_same_place_is_found_again_in_a_new_trace() -> None:
    decode = positions(_trace([["query", "weights"]] * 2, ["alignment"]))
    single = positions(_trace([], ["query", "weights"]))
    assert same_place(decode, P("weights", 1)) == 3
    assert same_place(decode, P("weights", 7)) == 3  # a shorter decode: the nearest step
    assert same_place(decode, P("weights", None)) == 1  # from a single attention: the first step
    assert same_place(single, P("weights", 1)) == 1
    assert same_place(single, P("alignment", None)) is None


def test_stages_made_before_the_steps_come_first_and_modules_take_turns() -> None:
    """An encoder-decoder: the encoder's self-attention once, then each step's self- and cross-attention."""
    trace = Trace(VariantRun(settings=Settings()), ("a",), ("a",), "cpu", "float32")
    places = [Place("weights", module="enc_attn")] + [
        Place(name, step=t, module=module) for t in range(2) for module in ("self_attn", "cross_attn")
        for name in ("scores", "weights")] + [Place("alignment")]
    for place in places:
        trace.add(Stage(place, torch.zeros(1), "", (Axis("dim", ("d0",)),)))
    found = positions(trace)
    assert found == [P("weights", None, "enc_attn"),
                     P("scores", 0, "self_attn"), P("weights", 0, "self_attn"),
                     P("scores", 0, "cross_attn"), P("weights", 0, "cross_attn"),
                     P("scores", 1, "self_attn"), P("weights", 1, "self_attn"),
                     P("scores", 1, "cross_attn"), P("weights", 1, "cross_attn"), P("alignment")]
    assert bar_window(found, 0) == [0, 1, 2, 3, 4, 9]  # before the steps: the first step's stages
    assert bar_window(found, 6) == [0, 5, 6, 7, 8, 9]
    assert trace.stage("weights", step=1, module="cross_attn").place == Place("weights", step=1, module="cross_attn")
    assert Place("weights", layer=0, head=1, step=3, module="cross_attn").key == "blocks.0.cross_attn.weights@h1@t3"
