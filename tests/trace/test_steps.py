"""Steps named for what they are, and a trace that grows without a reader ever seeing half a step."""

from __future__ import annotations

import threading

import pytest
import torch

from attn_tui import i18n
from attn_tui.ask.settings import Settings
from attn_tui.trace.growing import Growing
from attn_tui.trace.meta import VariantRun
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Axis, Stage, Trace
from attn_tui.trace.steps import decoder_step, generated_token, key_tile, recorded_call
from tests.limits import limit

STAGES_PER_STEP = 5


def _keys(n: int) -> Axis:
    return Axis("key", tuple(f"k{j}" for j in range(n)))


def _step_stages(t: int) -> list[Stage]:
    """Step t's stages: a growing key axis (step t sees keys 0…t), each tensor filled with t so a reader
    can tell which step a stage came from."""
    axes = (Axis("query", ("q",)), _keys(t + 1))
    return [Stage(Place(f"s{n}", step=t), torch.full((1, t + 1), float(t)), "x", axes) for n in range(STAGES_PER_STEP)]


def _start() -> Trace:
    trace = Trace(VariantRun(settings=Settings()), ("q",), (), "cpu", "float32")
    trace.add(Stage(Place("before"), torch.zeros(1, 1), "x", (Axis("query", ("q",)), _keys(1))))
    return trace


def test_each_kind_of_step_is_named_and_labelled_in_english_and_korean() -> None:
    steps = [decoder_step(3, "2"), generated_token(5, "the"), key_tile(2, 8, ("a", "b", "c", "d")),
             recorded_call(1, 1, 0)]
    assert [str(s.label) for s in steps] == ["decoder step 3: '2'", "token 5: 'the'", "tile 2 (keys 8–11)",
                                             "call 1, batch item 0"]
    assert [str(s.name) for s in steps] == ["decoder step 3", "token 5", "tile 2", "step 1"]
    i18n.set_language("ko")
    try:
        labels = [str(s.label) for s in steps]
        names = [str(s.name) for s in steps]
    finally:
        i18n.set_language("en")
    assert labels == ["디코더 스텝 3: '2'", "토큰 5: 'the'", "타일 2 (키 8–11)", "호출 1, 배치 항목 0"]
    assert names == ["디코더 스텝 3", "토큰 5", "타일 2", "스텝 1"]


def test_a_grown_trace_is_a_new_trace_and_the_old_one_is_left_as_it_was() -> None:
    first = _start()
    grown = first.grown(decoder_step(0, "a", ("k0",)), _step_stages(0))
    again = grown.grown(decoder_step(1, "b", ("k1",)), _step_stages(1))
    assert (first.version, grown.version, again.version) == (0, 1, 2)
    assert first.steps() == 0 and first.step_axis is None and len(first) == 1
    assert grown.steps() == 1 and len(grown) == 1 + STAGES_PER_STEP and again.steps() == 2
    assert again.step_axis is not None and [again.step_axis.seen(t) for t in range(2)] == [1, 2]
    assert again.step_axis.keys(1) == _keys(2) and grown.step_axis is not None and grown.step_axis.keys(0) == _keys(1)
    assert again.stage("s0", step=1).shape == (1, 2)  # the key axis grew with the step
    with pytest.raises(ValueError):  # a step out of order
        again.grown(decoder_step(3, "c"), _step_stages(3))
    with pytest.raises(ValueError):  # a stage of another step
        again.grown(decoder_step(2, "c"), _step_stages(1))
    with pytest.raises(ValueError):  # another kind of step
        again.grown(key_tile(2, 0, ("k2",)), _step_stages(2))


@pytest.mark.slow
def test_a_reader_thread_sees_only_whole_snapshots_while_a_writer_appends_steps() -> None:
    growing = Growing(_start())
    total = 300
    seen: list[int] = []
    broken: list[str] = []
    done = threading.Event()

    def read() -> None:
        while not done.is_set() or len(seen) < 2:
            trace = growing.latest
            v = trace.version
            n_steps = 0 if trace.step_axis is None else len(trace.step_axis)
            seen_keys = 0 if trace.step_axis is None else trace.step_axis.seen(v - 1)
            if n_steps != v or trace.steps() != v or len(trace) != 1 + v * STAGES_PER_STEP or seen_keys != v:
                broken.append(f"version {v}: {n_steps} steps named, {trace.steps()} stepped, {len(trace)} stages")
            for t in range(v):  # every stage of every step there, with that step's values, found by place
                for n in range(STAGES_PER_STEP):
                    stage = trace.stages.get(Place(f"s{n}", step=t))
                    if stage is None or stage.shape != (1, t + 1) or float(stage.tensor[0, 0]) != t:
                        broken.append(f"version {v}: s{n}@t{t} is {stage}")
            seen.append(v)

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    snapshots = []
    for t in range(total):
        snapshots.append(growing.append(decoder_step(t, str(t), (f"k{t}",)), _step_stages(t)))
    done.set()
    for reader in readers:
        reader.join(timeout=limit(60))
    assert not broken, broken[:5]
    assert seen == sorted(seen) or len(readers) > 1  # each reader saw versions only go up
    assert growing.latest.version == total and max(seen) <= total
    assert [s.version for s in snapshots] == list(range(1, total + 1))
    assert len(snapshots[0]) == 1 + STAGES_PER_STEP  # a snapshot handed out earlier never gained later steps


def test_flash_names_its_steps_key_tiles_and_each_tile_adds_its_keys() -> None:
    from attn_tui.attention.engine import compute
    from tests.conftest import sentence

    trace = compute(sentence("나는 어제 친구와 함께 학교에 갔다 <pad>", variant="flash", tile=3))
    steps = trace.step_axis
    assert steps is not None and steps.kind == "tile" and len(steps) == trace.steps() == 3
    assert [str(steps.label(t)) for t in range(3)] == ["tile 0 (keys 0–2)", "tile 1 (keys 3–5)", "tile 2 (keys 6–6)"]
    for t in range(3):  # the keys a tile adds are its scores' columns; by its end it has seen all keys so far
        assert steps[t].new_keys == trace.stage("tile_scores", step=t).axes[1].labels
        assert steps.keys(t).labels == trace.key_tokens[:steps.seen(t)]
    assert steps.seen(2) == len(trace.key_tokens)


def test_recorded_code_names_its_steps_by_call_and_batch_item() -> None:
    import attn_tui
    from tests.sources.recorder import modules as m

    torch.manual_seed(0)
    module = m.MultiHeadAttention(8, 2)
    with attn_tui.record(tokens=["나는", "학교에", "간다"]) as rec:
        module(torch.randn(2, 3, 8), torch.tril(torch.ones(3, 3)).expand(2, 3, 3))
        module(torch.randn(1, 3, 8), torch.tril(torch.ones(3, 3)).expand(1, 3, 3))
    steps = rec.trace.step_axis
    assert steps is not None and steps.kind == "call" and len(steps) == rec.trace.steps() == 3
    assert [str(steps.label(t)) for t in range(3)] == ["call 0, batch item 0", "call 0, batch item 1",
                                                       "call 1, batch item 0"]
    assert [str(steps.name(t)) for t in range(3)] == ["step 0", "step 1", "step 2"]
