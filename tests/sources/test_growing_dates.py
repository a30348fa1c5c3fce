"""The date decoders publish each step as it is made, and the steps they publish are the finished trace's."""

from __future__ import annotations

import functools
import math

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.explain.cell import explain
from attn_tui.sources import run
from attn_tui.trace.shown import Shown
from attn_tui.trace.stage import Trace

ASKS = [ModelAsk("seq2seq-dates", "22 Nov 2026"),
        ModelAsk("seq2seq-dates", "2026년 11월 22일", target="2026-11-23", teacher_forcing=True),
        ModelAsk("transformer-dates", "Nov 22, 2026"),
        pytest.param(ModelAsk("transformer-dates", "22.11.2026", target="2026-11-22", teacher_forcing=True),
                     marks=pytest.mark.slow)]


@functools.lru_cache(maxsize=4)
def _whole(ask: ModelAsk) -> Trace:
    """The same ask computed at once, without anyone waiting for steps."""
    return run(ask).trace


@functools.lru_cache(maxsize=4)
def _grown(ask: ModelAsk) -> tuple[list[Shown], Shown]:
    """Each step's snapshot as the door handed it, and the finished result."""
    snapshots: list[Shown] = []
    final = run(ask, on_step=snapshots.append)
    return snapshots, final


@pytest.mark.slow
@pytest.mark.parametrize("ask", ASKS, ids=["gru", "gru-forced", "transformer", "transformer-forced"])
def test_each_published_step_equals_the_one_shot_trace_stage_by_stage(ask: ModelAsk) -> None:
    snapshots, final = _grown(ask)
    whole = _whole(ask)
    steps = whole.steps()
    assert steps == whole.meta.steps == len(snapshots) and final.trace.steps() == steps
    for t, shown in enumerate(snapshots):
        trace = shown.trace
        assert shown.ask == ask and trace.version == t + 1 and trace.steps() == t + 1
        assert trace.step_axis is not None and len(trace.step_axis) == t + 1
        ours = {p for p in trace.stages}
        # exactly the finished trace's stages made before or at step t: the encoder's, then steps 0…t
        assert ours == {p for p in whole.stages if (p.step is not None and p.step <= t)
                        or (p.step is None and not p.name.startswith("alignment"))}
        for place in ours:
            assert torch.equal(trace.stages[place].tensor, whole.stages[place].tensor), place.key
            assert trace.stages[place].axes == whole.stages[place].axes, place.key
        assert trace.query_tokens == whole.query_tokens[:t + 1]
        assert trace.meta.steps == t + 1 and trace.meta.fed == whole.meta.fed[:t + 1]
        assert whole.meta.output.startswith(trace.meta.output)
        assert str(trace.step_axis.label(t)) == str(whole.step_axis.label(t))
    last = snapshots[-1].trace
    for snapshot in (snapshots[0].trace, last):  # its newest step's cells explain themselves from the snapshot
        newest = [p for p in snapshot.stages if p.step == snapshot.steps() - 1]  # alone: the inputs its
        for place in newest:  # projections read came with it
            _explains(snapshot, place)
    assert len(snapshots[0].trace) < len(last)  # the first snapshot never gained the later steps


def _explains(trace: Trace, place) -> None:
    stage = trace.stages[place]
    arithmetic = explain(trace, place, tuple(n - 1 for n in stage.shape))
    assert math.isclose(arithmetic.total, arithmetic.expected, rel_tol=1e-4, abs_tol=1e-5) or \
        arithmetic.total == arithmetic.expected, (place.key, arithmetic)


def test_the_steps_are_named_decoder_steps_with_what_each_wrote() -> None:
    trace = _whole(ASKS[0])
    assert trace.step_axis is not None and trace.step_axis.kind == "decoder"
    assert [str(trace.step_axis.label(t)) for t in range(3)] == ["decoder step 0: '2'", "decoder step 1: '0'",
                                                                 "decoder step 2: '2'"]
    assert all(trace.step_axis.keys(t).labels == trace.key_tokens for t in range(trace.steps()))  # every input


def test_the_transformer_self_attention_keys_grow_with_the_step() -> None:
    trace = _whole(ASKS[2])
    assert trace.step_axis is not None
    assert [trace.step_axis.seen(t) for t in range(trace.steps())] == list(range(1, trace.steps() + 1))
    for t in range(trace.steps()):
        assert trace.stage("weights", 0, 0, t, "self_attn").axes[1] == trace.step_axis.keys(t)


def test_an_ask_whose_source_does_not_grow_is_returned_whole_without_steps() -> None:
    from tests.conftest import sentence

    published: list[Shown] = []
    shown = run(sentence("나는 학교에 간다"), on_step=published.append)
    assert not published and shown.trace.version == 0


@pytest.mark.parametrize("ask", ASKS[::2], ids=["gru", "transformer"])
def test_the_alignment_of_a_decode_being_made_is_the_finished_alignments_first_rows(ask: ModelAsk) -> None:
    import numpy as np

    from attn_tui.present.model_view import alignment_so_far

    snapshots, _ = _grown(ask)
    whole = _whole(ask)
    cross = whole.layers > 1
    places = [(1, 2), (1, None), (0, 0)] if cross else [(None, None)]
    for t in (0, 3):
        part = snapshots[t].trace
        assert part.find("alignment") is None  # the alignment stage comes with the last step
        for layer, head in places:
            module = "cross_attn" if cross else None
            title, grid = alignment_so_far(part, "context" if not cross else "weights", t, layer, head, module)
            _, finished = alignment_so_far(whole, "context" if not cross else "weights", t, layer, head, module)
            assert grid.values.shape == (t + 1, len(whole.key_tokens)) and grid.filled_rows == t + 1
            assert np.allclose(grid.values, finished.values[:t + 1]) and grid.row_labels == finished.row_labels[:t + 1]
            assert f"{t + 1} of {t + 1} decoder steps" in title
