"""rope, gqa, alibi, sink and flash beyond parity: stage names, the inspector on every cell, long inputs."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys

import pytest
import torch

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.explain.cell import explain
from attn_tui.trace.ops import Place
from attn_tui.trace.values import stats_of
from tests.conftest import matrices, sentence, x_matrix
from tests.limits import limit

MODERN = ["rope", "gqa", "alibi", "sink", "flash"]

REQUESTS = {
    "rope_sentence_sliding": sentence("나는 학교에 간다 오늘 <pad>", variant="rope", mask="sliding+padding", window=2),
    "rope_typed_cross": matrices([[1, 0, 0.5, 2], [0, 1, 1, 0]], [[1, 0, 0, 1], [0, 1, 1, 0], [2, 1, 0, 0]],
                                 [[1], [2], [3]], variant="rope", rope_base=100.0, mask="causal"),
    "gqa_sentence": sentence("the cat sat on it", variant="gqa", heads=4, kv_heads=2, dim=8, mask="causal",
                             positional=True),
    "gqa_x_mqa": x_matrix([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], variant="gqa", heads=2, kv_heads=1,
                          mask="sliding", window=2, mask_fill="-1e9"),
    "alibi_heads": sentence("나는 어제 학교에 갔다 <pad>", variant="alibi", heads=4, dim=8, mask="padding"),
    "alibi_one_head_typed": matrices([[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [1, 1]], [[1, 2], [3, 4], [5, 6]],
                                     variant="alibi", heads=1, temperature=2.0),
    "sink_heads_sliding": sentence("a b c d e", variant="sink", heads=2, dim=4, mask="sliding", window=2),
    "sink_empty_row": matrices([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2], [3, 4]], variant="sink", heads=1,
                               custom_mask=[[0, 0], [1, 1]]),
    "flash_three_tiles": sentence("나는 어제 친구와 함께 학교에 갔다 <pad>", variant="flash", tile=3,
                                  mask="causal+padding"),
    "flash_sliding_empty_tiles": matrices([[1, 0], [0, 1], [1, 1], [2, 0], [0, 2]],
                                          [[1, 0], [0, 1], [1, 1], [2, 0], [0, 2]], [[1], [2], [3], [4], [5]],
                                          variant="flash", tile=2, mask="sliding", window=1),
}


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5)


@pytest.mark.parametrize("variant", MODERN)
def test_stage_names_follow_the_registry(variant: str) -> None:
    trace = compute(sentence("a b c d", variant=variant, dim=4, heads=2))
    stages = list(VARIANTS[variant].stages)
    assert trace.names() == ["embedding"] + stages
    one = compute(sentence("a b c d", variant=variant, dim=4, heads=1)) if variant in ("alibi", "sink") else None
    if one is not None:
        assert one.names() == ["embedding"] + stages[:-1]  # one head: no concat
        assert all(place.head is None for place in one.stages)
    assert all(stage.formula for stage in trace)


@pytest.mark.parametrize("key", list(REQUESTS))
def test_every_cell_of_every_stage_is_recomputed(key: str) -> None:
    trace = compute(REQUESTS[key])
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert _close(arithmetic.total, arithmetic.expected), (stage.key, index, arithmetic)
            assert arithmetic.matches and arithmetic.lines and arithmetic.title


def test_the_rotation_of_one_pair_is_shown_with_its_angle() -> None:
    trace = compute(REQUESTS["rope_sentence_sliding"])
    lines = "\n".join(explain(trace, Place("query_rot"), (3, 1)).lines)
    assert "pair (1, 5)" in lines and "θ_1 = 10000^(−2·1/8)" in lines and "angle = 3·θ_1" in lines
    assert "cos = " in lines and "sin = " in lines
    upper = "\n".join(explain(trace, Place("key_rot"), (2, 6)).lines)
    assert "pair (2, 6)" in upper and "x_6·cos + x_2·sin" in upper


def test_the_flash_inspector_names_the_rescale() -> None:
    trace = compute(REQUESTS["flash_three_tiles"])
    first = explain(trace, Place("rescale", step=0), (0, 0))
    assert first.total == 0 and "m_prev = −∞" in "\n".join(first.lines)
    grown = [explain(trace, Place("rescale", step=t), (i, 0)) for t in (1, 2) for i in range(7)]
    assert any(0 < a.total < 1 and "grew" in "\n".join(a.lines) for a in grown)
    masked = explain(trace, Place("tile_scores", step=1), (0, 1))  # query 0, key 4: after it
    assert math.isinf(masked.total) and "comes after query 0" in "\n".join(masked.lines)
    assert masked.lines[0] == "column 1 of tile 1 is key 4"  # tiles counted from 0, as the caption and torch count


def test_no_warning_for_the_running_max_before_any_key() -> None:
    trace = compute(REQUESTS["flash_sliding_empty_tiles"])
    assert torch.isneginf(trace.tensor("running_max", step=0)[2:]).all()  # rows 2… see no key of tile 0
    assert not any("infinite" in str(w) for w in trace.warnings)


def test_gqa_records_which_kv_head_each_query_head_reads() -> None:
    trace = compute(REQUESTS["gqa_sentence"])
    assert trace.meta.kv_heads == 2 and trace.meta.kv_map == (0, 0, 1, 1)
    text = "\n".join(explain(trace, Place("key", head=3), (0, 1)).lines)
    assert "column 3 of k_proj" in text  # kv head 1 of width 2: columns 2…3
    assert "shared by query heads 2, 3" in str(trace.stage("key", head=2).formula)


def test_weights_row_sums_count_the_sink() -> None:
    trace = compute(REQUESTS["sink_heads_sliding"])
    stats = stats_of(trace, trace.stage("weights", head=1))
    assert stats.row_deviation < 1e-6


N = 400
LONG = " ".join(f"w{i % 37}" for i in range(N - 2)) + " <pad> <pad>"
TILES = [(slice(0, 7), slice(0, 9)), (slice(200, 264), slice(100, 356)), (slice(N - 5, N), slice(N - 70, N))]


@pytest.mark.parametrize("variant,mask", [("rope", "causal"), ("gqa", "sliding+padding"), ("alibi", "padding"),
                                          ("sink", "sliding"), ("scaled_dot", "sliding+padding")])
def test_long_inputs_are_read_by_tiles_equal_to_the_dense_stages(variant: str, mask: str) -> None:
    request = sentence(LONG, variant=variant, mask=mask, window=17, heads=2, kv_heads=1, dim=8)
    dense, lazy = compute(request, lazy=False), compute(request, lazy=True)
    assert lazy.lazy and lazy.names() == dense.names() and lazy.warnings == dense.warnings
    for stage in lazy:
        whole = dense.stages[stage.place].tensor
        if not stage.lazy:
            assert torch.allclose(stage.tensor, whole, atol=1e-5, rtol=1e-5), stage.key
            continue
        for rows, cols in TILES:
            tile, expected = stage.data[rows, cols], whole[rows, cols]
            finite = torch.isfinite(expected)
            assert torch.equal(torch.isfinite(tile), finite), stage.key
            assert torch.allclose(tile[finite], expected[finite], atol=1e-5, rtol=1e-5), (stage.key, rows, cols)
        a, b = stats_of(dense, dense.stages[stage.place]), stats_of(lazy, stage)
        assert (a.masked, a.marks) == (b.masked, b.marks) and a.lo == pytest.approx(b.lo, abs=1e-5)
        if stage.name == "weights":
            assert b.row_deviation < 1e-5


@pytest.mark.slow
@pytest.mark.parametrize("variant,heads", [("gqa", 2), ("alibi", 1), ("sink", 1)])
def test_sixteen_thousand_tokens_with_a_sliding_window_never_hold_a_whole_stage(variant: str, heads: int) -> None:
    """Like scaled_dot (tests/attention/test_lazy.py), 16k tokens stay far below one dense 1 GB stage.

    rope's score stages are scaled_dot's on rotated q and k: its long input is checked by tiles above.
    """
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec, so a big pytest worker would count
    code = ("from attn_tui.attention.engine import compute\n"
            "from attn_tui.ask.settings import VariantAsk, SentenceInput, Settings\n"
            "text = ' '.join(f'w{i % 300}' for i in range(16384))\n"
            f"s = Settings.of(variant={variant!r}, mask='sliding+padding', window=512, heads={heads}, kv_heads=1,"
            " device='cpu')\n"
            "trace = compute(VariantAsk(SentenceInput(text), s))\n"
            "head = 1 if trace.heads > 1 else None\n"
            "tile = trace.stage('weights', head=head).data[8000:8060, 7000:7100]\n"
            "assert float(tile[:, :7000 - 8000 + 512 + 100].sum()) >= 0\n"
            "print(next(int(line.split()[1]) for line in open('/proc/self/status')\n"
            "            if line.startswith('VmHWM')) // 1024)\n")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=limit(600))
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) < 900, f"peak {result.stdout.strip()} MB"


def _in(language: str, stage: str, keys: tuple[str, ...]) -> str:
    from attn_tui import i18n
    from attn_tui.present.explanations import explanation

    i18n.set_language(language)
    try:
        return explanation(stage, keys)
    finally:
        i18n.set_language("en")


@pytest.mark.parametrize("key", list(REQUESTS))
def test_every_stage_has_an_explanation_and_formula_in_both_languages(key: str) -> None:
    from attn_tui import i18n

    trace = compute(REQUESTS[key])
    for name in trace.names():
        english, korean = _in("en", name, trace.meta.explains), _in("ko", name, trace.meta.explains)
        assert english.count(".") >= 2 and any("\uac00" <= ch <= "\ud7a3" for ch in korean), name
    i18n.set_language("ko")
    try:
        for stage in trace:
            if stage.name in ("tile_scores", "running_max", "bias", "weights", "sink_mass", "query_rot"):
                assert str(stage.formula) and stage.formula == stage.formula
    finally:
        i18n.set_language("en")


def test_explanations_of_the_variants_own_stages_differ_from_the_generic_ones() -> None:
    assert "rotated" in _in("en", "scores", ("rope",)) and "rotated" not in _in("en", "scores", ("scaled_dot",))
    assert "group" in _in("en", "key", ("gqa",)) and "sink" in _in("en", "weights", ("sink",))
    assert "accumulator" in _in("en", "output", ("flash",))


def test_each_variants_own_settings_apply_to_it_alone() -> None:
    from attn_tui.ask.applies import applicable, not_applying

    own = {"kv_heads": ("gqa",), "rope_base": ("rope", "mla"), "tile": ("flash",), "depth": ("diff",),
           "absorbed": ("mla",)}
    for variant in VARIANTS:
        found = applicable(sentence("a b", variant=variant))
        assert {name for name in own if name in found} == {n for n, v in own.items() if variant in v}, variant
        assert ("heads" in found) == (variant in ("multihead", "gqa", "alibi", "sink", "diff", "mla")), variant
        assert "window" not in found
    assert "window" in applicable(sentence("a b", mask="sliding")) and "window" in applicable(
        sentence("a b", mask="sliding+padding"))
    reasons = [str(m) for m in not_applying(sentence("a b", variant="rope"), {"tile", "window", "rope_base"})]
    assert reasons == ["--window needs a sliding mask (--mask sliding or sliding+padding), not 'none'",
                       "--tile does not apply to rope: it belongs to flash"]
