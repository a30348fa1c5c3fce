"""The CLI table and the stage picker name a step for what it is, from the trace's own step axis: a flash tile is
`tile 0` (Korean 타일, never 디코더 단계), a decoder step `decoder step 2`, a recorded call `call 0, batch item 1`."""

from __future__ import annotations

import io

import torch
from rich.console import Console

import attn_tui
from attn_tui import i18n
from attn_tui.ask.settings import ModelAsk
from attn_tui.attention.engine import compute
from attn_tui.present.printed import printed_trace
from attn_tui.present.step_words import printed_step, step_label
from attn_tui.render.stage_table import print_trace
from attn_tui.sources import run
from attn_tui.trace.stage import Stage, Trace
from tests.conftest import sentence
from tests.sources.recorder import modules as m


def _table(trace: Trace, stages: list[Stage]) -> str:
    out = io.StringIO()
    print_trace(printed_trace(trace, stages), Console(file=out, width=120))
    return out.getvalue()


def test_a_flash_tile_is_printed_as_a_tile_in_both_languages() -> None:
    trace = compute(sentence("a b c d e f g", variant="flash", tile=3))
    stages = [trace.stage("running_max", step=t) for t in range(3)]
    text = _table(trace, stages)
    assert all(f"running_max · tile {t}" in text for t in range(3))
    assert step_label(trace, 2) == "tile 2 (keys 6–6)"
    i18n.set_language("ko")
    korean = _table(trace, stages)
    assert "running_max · 타일 1" in korean and "디코더 단계" not in korean


def test_a_decoder_step_is_printed_as_one() -> None:
    trace = run(ModelAsk("seq2seq-dates", "22 Nov 2026")).trace
    assert printed_step(trace, 2) == "decoder step 2"
    assert "weights · decoder step 2" in _table(trace, [trace.stage("weights", step=2)])
    assert (step_label(trace, 2) or "").startswith("decoder step 2: ")


def test_a_recorded_call_is_printed_by_its_call_and_batch_item() -> None:
    torch.manual_seed(0)
    module = m.MultiHeadAttention(8, 2)
    with attn_tui.record(tokens=["a", "b", "c"]) as rec:
        module(torch.randn(2, 3, 8))  # one call, two batch items: two steps
    trace = rec.trace
    assert [printed_step(trace, t) for t in range(trace.steps())] == ["call 0, batch item 0", "call 0, batch item 1"]
    stage = next(s for s in trace if s.name == "weights" and s.step == 1)
    assert "call 0, batch item 1" in _table(trace, [stage])
