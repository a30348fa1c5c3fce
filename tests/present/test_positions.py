"""Where the arrows go: one position per stage, or per stage and decoder step for a seq2seq decode."""

from __future__ import annotations

import torch

from attn_tui.core.meta import VariantRun
from attn_tui.core.ops import Place
from attn_tui.core.settings import Settings
from attn_tui.core.stage import Axis, Stage, Trace
from attn_tui.present.positions import bar_window, positions, same_place


def _trace(names_by_step: list[list[str]], after: list[str]) -> Trace:
    trace = Trace(VariantRun(Settings()), ("a",), ("a",), "cpu", "float32")
    places = [Place(n, step=t) for t, names in enumerate(names_by_step) for n in names]
    for place in places + [Place(n) for n in after]:
        trace.add(Stage(place, torch.zeros(1), "", (Axis("dim", ("d0",)),)))
    return trace


def test_a_single_attention_has_one_position_per_stage() -> None:
    trace = _trace([], ["query", "key", "weights"])
    places = positions(trace)
    assert places == [("query", None), ("key", None), ("weights", None)]
    assert bar_window(places, 1) == [0, 1, 2]


def test_a_decode_runs_step_by_step_and_ends_on_the_alignment() -> None:
    trace = _trace([["query", "weights"]] * 3, ["alignment"])
    places = positions(trace)
    assert places == [("query", 0), ("weights", 0), ("query", 1), ("weights", 1), ("query", 2), ("weights", 2),
                      ("alignment", None)]
    assert bar_window(places, 3) == [2, 3, 6]  # step 1's stages, then the alignment
    assert bar_window(places, 6) == [4, 5, 6]  # on the alignment: the last step's


def test_the_same_place_is_found_again_in_a_new_trace() -> None:
    decode = positions(_trace([["query", "weights"]] * 2, ["alignment"]))
    single = positions(_trace([], ["query", "weights"]))
    assert same_place(decode, ("weights", 1)) == 3
    assert same_place(decode, ("weights", 7)) == 3  # a shorter decode: the nearest step
    assert same_place(decode, ("weights", None)) == 1  # from a single attention: the first step
    assert same_place(single, ("weights", 1)) == 1
    assert same_place(single, ("alignment", None)) is None
