"""The inspector's arithmetic must reproduce every cell of every stage of every variant."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import ModelAsk
from attn_tui.attention.engine import compute
from attn_tui.explain.cell import explain
from attn_tui.sources import run
from attn_tui.trace.ops import Place
from tests.conftest import matrices, sentence, x_matrix

REQUESTS = {
    "scaled_dot_sentence_causal_pe": sentence("나는 학교에 간다 오늘", variant="scaled_dot", mask="causal",
                                              positional=True),
    "dot_padded": sentence("a b c <pad>", variant="dot", mask="padding"),
    "general_typed": matrices([[1, 0], [0, 1]], [[1, 0, 0.5], [0, 1, 0.5], [0.5, 0.5, 0]],
                              [[1, 0], [0, 1], [2, 2]], variant="general", pad_keys=1, mask="padding"),
    "additive_sentence": sentence("the cat sat", variant="additive", dim=4),
    "concat_typed": matrices([[0.5, -1], [1, 2]], [[1, 0], [0, 1], [1, 1]], [[1], [2], [3]],
                             variant="concat", dim=3),
    "multihead_sentence": sentence("나는 어제 학교에 갔다", variant="multihead", heads=2, dim=4,
                                   positional=True, temperature=2.0),
    "multihead_x": x_matrix([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0]], variant="multihead", heads=2,
                            mask="causal", mask_fill="-1e9"),
    "scaled_empty_row": matrices([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2], [3, 4]],
                                 custom_mask=[[0, 0], [1, 1]], variant="scaled_dot"),
}


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5)


@pytest.mark.parametrize("key", list(REQUESTS))
def test_every_cell_of_every_stage_is_recomputed(key: str) -> None:
    trace = compute(REQUESTS[key])
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert _close(arithmetic.total, arithmetic.expected), (stage.key, index, arithmetic)
            assert arithmetic.lines and arithmetic.title


def test_masked_and_weights_stages_carry_their_mask() -> None:
    trace = compute(sentence("a b c", variant="scaled_dot", mask="causal"))
    for name in ("masked", "weights"):
        spec = trace.mask_of(trace.stage(name))
        assert spec is not None and torch.equal(spec.allowed, torch.ones(3, 3, dtype=torch.bool).tril())
    assert trace.mask_of(trace.stage("scores")) is None
    unmasked = compute(sentence("a b c"))
    assert unmasked.mask_of(unmasked.stage("masked")) is None


def test_a_masked_cell_says_why_and_shows_the_replaced_score() -> None:
    trace = compute(sentence("a b <pad>", variant="scaled_dot", mask="causal+padding"))
    text = "\n".join(explain(trace, Place("masked"), (1, 2)).lines)
    assert "comes after query 1" in text and "key 2 is padding" in text
    scaled = float(trace["scaled"][1, 2])
    assert f"{scaled:.4g}" in text and "replaced by the fill -inf" in text


def test_weights_text_shows_the_softmax_terms() -> None:
    trace = compute(load_samples()["korean"].request)
    arithmetic = explain(trace, Place("weights"), (0, 1))
    text = "\n".join(arithmetic.lines)
    assert "max of row 0" in text and "Σ_k" in text
    assert _close(arithmetic.total, float(trace.tensor("weights")[0, 1]))


def test_fully_masked_row_explains_zero_weights() -> None:
    trace = compute(REQUESTS["scaled_empty_row"])
    arithmetic = explain(trace, Place("weights"), (0, 0))
    assert arithmetic.total == 0.0 and "nothing to attend" in "\n".join(arithmetic.lines)


@pytest.mark.parametrize("name", list(load_samples()))
def test_samples_first_weights_cell(name: str) -> None:
    trace = compute(load_samples()[name].request)
    stage = trace.find("weights") or trace.find("weights_1") or trace.stage("output")  # flash never makes the weights
    arithmetic = explain(trace, stage.place, (0, 0))
    assert _close(arithmetic.total, arithmetic.expected)


def _in(language: str, stage: str, keys: tuple[str, ...]) -> str:
    from attn_tui import i18n
    from attn_tui.present.explanations import explanation

    i18n.set_language(language)
    try:
        return explanation(stage, keys)
    finally:
        i18n.set_language("en")


def test_every_stage_has_an_explanation_in_both_languages() -> None:
    for key in REQUESTS:
        trace = compute(REQUESTS[key])
        for name in trace.names():
            english = _in("en", name, trace.meta.explains)
            korean = _in("ko", name, trace.meta.explains)
            assert english.count(".") >= 2 and any("\uac00" <= ch <= "\ud7a3" for ch in korean), name


@pytest.mark.slow
@pytest.mark.parametrize("name", ["seq2seq-dates", "seq2seq-dates-general"])
def test_every_cell_of_a_seq2seq_decode_is_recomputed(name: str) -> None:
    trace = run(ModelAsk(name, "22 Nov 2026")).trace
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert _close(arithmetic.total, arithmetic.expected), (stage.key, index, arithmetic)
            assert arithmetic.lines and arithmetic.title


def test_seq2seq_params_name_the_attention_weights() -> None:
    assert set(run(ModelAsk("seq2seq-dates", "2026-11-22")).trace.params) == {"W_a.weight", "U_a.weight",
                                                                                 "v_a.weight"}
    assert set(run(ModelAsk("seq2seq-dates-general", "2026-11-22")).trace.params) == {"W_a.weight"}


@pytest.mark.slow
def test_every_cell_of_a_real_model_layer_is_recomputed() -> None:
    trace = run(ModelAsk("minilm", "the cat sat", layer=1, head=3, pad_to=6)).trace  # padding: masked keys too
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert _close(arithmetic.total, arithmetic.expected), (stage.key, index, arithmetic)
    assert "b_q" in explain(trace, Place("query", 1, 3), (0, 0)).title  # the model's bias is in the sum


def test_seq2seq_and_model_stages_have_explanations_in_both_languages() -> None:
    for stage in ("query", "key", "query_proj", "key_proj", "energy", "scores", "weights", "context", "alignment"):
        for language in ("en", "ko"):
            assert _in(language, stage, ("decoder", "additive")), stage
    assert "decoder" in _in("en", "query", ("decoder", "general"))
    assert "v_a" in _in("en", "scores", ("decoder", "additive"))


@pytest.mark.slow
def test_a_cell_that_sums_a_long_row_matches_a_python_loop_over_it() -> None:
    """A weight and an output at 3,000 keys: the inspector sums the row in torch; here it is summed again
    one term at a time, exactly (math.fsum), as the reference."""
    n = 3000
    trace = compute(sentence(" ".join(f"w{i % 89}" for i in range(n)), variant="scaled_dot", mask="causal"))
    i, j = n - 1, 7
    assert trace.lazy  # the score stages are read a row at a time, as the app reads it
    masked = [float(x) for x in trace.stage("masked").data[i].double()]
    top = max(masked)
    exps = [math.exp(x - top) for x in masked]
    weight = explain(trace, Place("weights"), (i, j))
    assert math.isclose(weight.total, exps[j] / math.fsum(exps), rel_tol=1e-12)
    assert weight.matches and "+ …" in "\n".join(weight.lines)
    a, v = trace.stage("weights").data[i].double().tolist(), trace.tensor("value")[:, 3].double().tolist()
    output = explain(trace, Place("output"), (i, 3))
    assert math.isclose(output.total, math.fsum(x * y for x, y in zip(a, v)), rel_tol=1e-9, abs_tol=1e-12)
    assert output.matches and f"({n - 8} more)" in "\n".join(output.lines)


def test_a_fully_masked_row_is_zeros_as_sdpa_returns_and_a_plain_softmax_would_give_nan() -> None:
    # the second query may see no key (its custom row is all 0): SDPA's zeros, not what the notes' softmax gives
    request = matrices([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2], [3, 4]], custom_mask=[[1, 1], [0, 0]])
    trace = compute(request)
    masked = trace.tensor("masked")[1]  # (keys,) all -inf
    assert bool(torch.isnan(torch.nn.functional.softmax(masked, dim=-1)).all())  # the notes' F.softmax: NaN
    assert bool(torch.isnan(torch.nn.Softmax(dim=-1)(masked)).all())
    assert trace.tensor("weights")[1].tolist() == [0.0, 0.0]
    warning = next(str(w) for w in trace.warnings if "may attend to no key" in str(w))
    assert "as SDPA returns" in warning and "NaN" in warning
    arithmetic = explain(trace, Place("weights"), (1, 0))
    assert arithmetic.matches and "a plain softmax would give NaN here" in "\n".join(arithmetic.lines)
