"""The layer's geometry as the one line the app shows beside a model's stage, read from the trace's record."""

from __future__ import annotations

from attn_tui import i18n
from attn_tui.ask.settings import Settings
from attn_tui.attention.engine import compute
from attn_tui.present.geometry_line import geometry_line, scale_text
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.meta import VariantRun
from attn_tui.trace.stage import Trace
from tests.conftest import sentence

TEXT = "the cat sat on the warm mat"


def _trace_with(geometry: LayerGeometry) -> Trace:
    trace = Trace(VariantRun(settings=Settings()), (), (), "cpu", "float32")
    trace.geometry[3] = geometry
    return trace


def test_a_gemma_style_layer_reads_as_the_issue_writes_it() -> None:
    sliding = LayerGeometry("sliding", 4, Positional("rotary", 10000.0), 64 ** -0.5, soft_cap=50.0)
    assert geometry_line(_trace_with(sliding), 3) == \
        "layer 3: sliding window 4 · rotary θ=10000 · scale 1/√64 · cap 50"
    partial = LayerGeometry("causal", None, Positional("rotary", 500.0, 0.25), 0.3)
    assert geometry_line(_trace_with(partial), 3) == \
        "layer 3: causal · rotary θ=500 on 25% of each head · scale 0.3"


def test_each_variant_says_its_own_layer() -> None:
    line = {variant: geometry_line(compute(sentence(TEXT, variant=variant, dim=16, heads=4, **extra)), 0)
            for variant, extra in (("scaled_dot", {"positional": True}), ("dot", {"temperature": 2.0}),
                                   ("alibi", {"mask": "causal"}), ("sink", {"mask": "sliding", "window": 2}),
                                   ("rope", {"rope_base": 500.0}))}
    assert line["scaled_dot"] == "layer 0: every key · positions added to the input · scale 1/√16"
    assert line["dot"] == "layer 0: every key · no positions · scale 1 · temperature 2"
    assert line["alibi"] == "layer 0: causal · ALiBi slopes 0.25…0.00391 · scale 1/√4"
    assert line["sink"] == "layer 0: sliding window 2 · no positions · scale 1/√4 · a sink logit per head"
    assert line["rope"] == "layer 0: every key · rotary θ=500 · scale 1/√16"


def test_the_line_is_korean_in_korean_and_fits_its_cells() -> None:
    from rich.cells import cell_len

    sliding = LayerGeometry("sliding", 4, Positional("rotary", 10000.0), 64 ** -0.5, soft_cap=50.0)
    i18n.set_language("ko")
    korean = geometry_line(_trace_with(sliding), 3)
    assert korean == "층 3: 슬라이딩 윈도우 4 · 회전(RoPE) θ=10000 · 스케일 1/√64 · 소프트 캡 50"
    assert cell_len(korean) < 80


def test_scale_reads_as_one_over_a_root_only_when_it_is_one() -> None:
    assert [scale_text(s) for s in (0.125, 1.0, 0.3, 8 ** -0.5, 2.0)] == ["1/√64", "1", "0.3", "1/√8", "2"]


def test_no_geometry_no_line() -> None:
    assert geometry_line(Trace(VariantRun(settings=Settings()), (), (), "cpu", "float32"), 0) == ""
