"""The diff variant (differential attention) against a float64 loop written from the paper, and against DiffLlama."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import pytest
import torch

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.errors import ConfigError
from attn_tui.explain.cell import explain
from tests.conftest import matrices, sentence
from tests.limits import limit

TEXT = "나는 어제 친구와 함께 학교에 갔다 <pad>"
DIFF_STAGES = ("lambda", "diff_weights", "diff_output", "head_norm")


def _random(rows: int, cols: int, seed: int) -> list[list[float]]:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)).tolist()


def paper_reference(q, k, v, heads: int, allowed, lam_vectors, depth: int, eps: float = 1e-5):
    """Ye et al. 2024, eq. (1)-(3), cell by cell in float64: per head, softmax of each half's scaled scores (masked
    cells skipped), A₁ − λ·A₂, times V, then (1 − λ_init)·RMSNorm over the head's width."""
    q, k, v = (torch.as_tensor(t, dtype=torch.float64) for t in (q, k, v))
    n_q, n_k = q.shape[0], k.shape[0]
    w, w_v = q.shape[1] // heads, v.shape[1] // heads
    d = w // 2
    l_q1, l_k1, l_q2, l_k2 = (lam_vectors[name].double().tolist() for name in
                              ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"))
    init = 0.8 - 0.6 * math.exp(-0.3 * depth)
    lam = (math.exp(sum(a * b for a, b in zip(l_q1, l_k1))) - math.exp(sum(a * b for a, b in zip(l_q2, l_k2)))
           + init)
    out = {"weights_1": [], "weights_2": [], "diff_weights": [], "diff_output": [], "head_norm": []}
    for h in range(heads):
        maps = []
        for half in (0, 1):
            cols = range(h * w + half * d, h * w + half * d + d)
            a = torch.zeros(n_q, n_k, dtype=torch.float64)
            for i in range(n_q):
                seen = [j for j in range(n_k) if allowed is None or bool(allowed[i, j])]
                s = {j: sum(float(q[i, c]) * float(k[j, c]) for c in cols) / math.sqrt(d) for j in seen}
                top = max(s.values(), default=0.0)
                total = sum(math.exp(x - top) for x in s.values())
                for j in seen:
                    a[i, j] = math.exp(s[j] - top) / total
            maps.append(a)
        diff = maps[0] - lam * maps[1]
        o = torch.zeros(n_q, w_v, dtype=torch.float64)
        for i in range(n_q):
            for c in range(w_v):
                o[i, c] = sum(float(diff[i, j]) * float(v[j, h * w_v + c]) for j in range(n_k))
        y = torch.zeros_like(o)
        for i in range(n_q):
            rms = math.sqrt(sum(float(x) ** 2 for x in o[i]) / w_v + eps)
            for c in range(w_v):
                y[i, c] = (1 - init) * float(o[i, c]) / rms
        for name, tensor in zip(out, (maps[0], maps[1], diff, o, y)):
            out[name].append(tensor)
    return out, lam, init


@pytest.mark.parametrize("heads,mask,depth", [(1, "none", 0), (2, "causal", 3), (2, "padding", 11),
                                              (4, "sliding", 1)])
def test_typed_matrices_equal_the_papers_formula(heads: int, mask: str, depth: int) -> None:
    q, k, v = _random(5, 8, 1), _random(5, 8, 2), _random(5, 4 * heads, 3)
    trace = compute(matrices(q, k, v, variant="diff", heads=heads, mask=mask, pad_keys=1, window=2, depth=depth,
                             dtype="float64"))
    allowed = None if trace.mask is None else trace.mask.allowed
    expected, lam, init = paper_reference(q, k, v, heads, allowed, trace.params, depth)
    for h in range(heads):
        head = h if heads > 1 else None
        for name, tensors in expected.items():
            assert torch.allclose(trace.tensor(name, head=head), tensors[h], atol=1e-12), (name, h)
        row = trace.tensor("lambda", head=head)[0].tolist()
        assert row[2:] == pytest.approx([init, lam], abs=1e-12) and row[0] - row[1] + init == pytest.approx(lam)
    if heads > 1:
        assert torch.allclose(trace.tensor("concat"), torch.cat(expected["head_norm"], dim=1), atol=1e-12)


def test_a_sentence_in_float32_equals_the_paper_in_float64() -> None:
    trace = compute(sentence(TEXT, variant="diff", heads=2, dim=8, mask="causal+padding", depth=5))
    q, k, v = (torch.cat([trace.tensor(n, head=h) for h in range(2)], dim=1) for n in ("query", "key", "value"))
    expected, _, _ = paper_reference(q, k, v, 2, trace.mask.allowed, trace.params, 5)
    for h in range(2):
        for name, tensors in expected.items():
            assert (trace.tensor(name, head=h).double() - tensors[h]).abs().max() <= 1e-5, (name, h)


def test_a_row_with_nothing_to_attend_is_zeros_and_said_once() -> None:
    trace = compute(REQUESTS["typed_empty_row"])
    assert not bool(trace.tensor("head_norm")[0].any()) and not bool(trace.tensor("diff_weights")[0].any())
    assert sum("may attend to no key" in str(w) for w in trace.warnings) == 1


def test_rows_of_the_difference_sum_to_one_minus_lambda_and_go_negative() -> None:
    trace = compute(sentence("the cat sat on the mat", variant="diff", heads=2, dim=8, mask="causal", depth=4))
    lam = float(trace.tensor("lambda", head=0)[0, 3])
    sums = trace.tensor("diff_weights", head=0).sum(-1)
    assert torch.allclose(sums, torch.full_like(sums, 1 - lam), atol=1e-6)
    assert float(trace.tensor("diff_weights", head=0).min()) < 0  # a diverging map, not a probability


@pytest.mark.slow
def test_the_variant_with_its_weights_copied_into_transformers_diffllama_equals_it() -> None:
    """DiffLlama pairs head p with head p + H/2 (H its heads, twice the variant's), and its value is the pair's two
    value heads side by side: the variant's seeded W_q, W_k, W_v and λ vectors, laid out so, give the module's own
    maps (output_attentions, eager) and o_proj's input. Rotation off (cos 1, sin 0): the variant has no positions."""
    from transformers import DiffLlamaConfig
    from transformers.models.diffllama.modeling_diffllama import DiffLlamaAttention

    heads, dim, depth = 2, 16, 3
    trace = compute(sentence("the cat sat on the mat today", variant="diff", heads=heads, dim=dim, mask="causal",
                             depth=depth, dtype="float64"))
    p = trace.params
    d = dim // heads // 2  # the width of a half: DiffLlama's head_dim
    config = DiffLlamaConfig(hidden_size=dim, num_attention_heads=2 * heads, num_key_value_heads=2 * heads,
                             head_dim=d, rms_norm_eps=1e-5, attention_bias=False)
    config._attn_implementation = "eager"
    module = DiffLlamaAttention(config, layer_idx=depth).double()

    def paired(weight: torch.Tensor) -> torch.Tensor:  # variant head h = [half 1 | half 2] → DiffLlama h, h + H
        halves = weight.view(heads, 2, d, dim)
        return torch.cat([halves[:, 0].reshape(heads * d, dim), halves[:, 1].reshape(heads * d, dim)])

    with torch.no_grad():
        module.q_proj.weight.copy_(paired(p["W_q"]))
        module.k_proj.weight.copy_(paired(p["W_k"]))
        module.v_proj.weight.copy_(paired(p["W_v"]))
        for name in ("lambda_q1", "lambda_k1", "lambda_q2", "lambda_k2"):
            getattr(module, name).copy_(p[name])
    seen = {}
    module.o_proj.register_forward_hook(lambda _m, args, _out: seen.setdefault("o_in", args[0]))
    x = trace.tensor("embedding")[None]  # (1, N, dim)
    n = x.shape[1]
    ones, zeros = torch.ones(1, n, d, dtype=torch.float64), torch.zeros(1, n, d, dtype=torch.float64)
    causal = torch.full((n, n), -torch.inf, dtype=torch.float64).triu(1)[None, None]
    with torch.no_grad():
        _, weights = module(x, (ones, zeros), causal)
    for h in range(heads):
        # DiffLlama's eager softmax runs in float32 even for float64 inputs: its maps agree to float32's rounding
        assert (trace.tensor("weights_1", head=h) - weights[0, h]).abs().max() <= 1e-6
        assert (trace.tensor("weights_2", head=h) - weights[0, h + heads]).abs().max() <= 1e-6
    assert (trace.tensor("concat") - seen["o_in"][0]).abs().max() <= 1e-5
    assert float(trace.tensor("lambda", head=0)[0, 2]) == pytest.approx(module.lambda_init, abs=1e-15)


REQUESTS = {
    "sentence_causal_padding": sentence("a b c <pad>", variant="diff", heads=2, dim=8, mask="causal+padding", depth=2),
    "float16_fill_1e9": sentence("나는 어제 학교에 갔다 <pad>", variant="diff", heads=2, dim=8, mask="padding",
                                 mask_fill="-1e9", dtype="float16", temperature=2.0),
    "typed_empty_row": matrices([[1, 0], [0, 1], [1, 1]], [[1, 0], [0, 1], [1, 1]], [[1, 2], [3, 4], [5, 6]],
                                variant="diff", heads=1, custom_mask=[[0, 0, 0], [1, 1, 0], [1, 1, 1]]),
}


@pytest.mark.parametrize("key", list(REQUESTS))
def test_every_cell_of_every_stage_is_recomputed_by_the_inspector(key: str) -> None:
    trace = compute(REQUESTS[key])
    assert not any(bool(torch.isnan(stage.tensor).any()) for stage in trace)
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches and arithmetic.lines and arithmetic.title, (stage.key, index, arithmetic)


def test_the_inspector_explains_lambda_from_its_four_vectors_and_a_negative_cell() -> None:
    trace = compute(sentence("the cat sat on the mat", variant="diff", heads=1, dim=8, mask="causal", depth=3))
    lam = explain(trace, trace.stage("lambda").place, (0, 3))
    text = "\n".join(lam.lines)
    assert "λ_q1" in text and "λ_k2" in text and "0.8 − 0.6·exp(−0.3·3)" in text and lam.matches
    diff = trace.tensor("diff_weights")
    i, j = (int(t) for t in divmod(int(diff.argmin()), diff.shape[1]))
    cell = explain(trace, trace.stage("diff_weights").place, (i, j))
    assert cell.total < 0 and cell.matches and "cancelled" in cell.lines[-1]


def test_stage_names_follow_the_registry() -> None:
    two = compute(sentence("a b c d", variant="diff", dim=8, heads=2))
    assert two.names() == ["embedding", *VARIANTS["diff"].stages]
    one = compute(sentence("a b c d", variant="diff", dim=8, heads=1))
    assert one.names() == ["embedding", *VARIANTS["diff"].stages[:-1]]  # one head: no concat


@pytest.mark.slow
def test_an_odd_head_width_is_refused_with_a_reason() -> None:
    with pytest.raises(ConfigError, match="even"):
        compute(sentence("a b c", variant="diff", dim=6, heads=2))
    result = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--variant", "diff", "--dim", "6",
                             "--text", "a b c"], capture_output=True, text=True, timeout=limit(120))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1 and "even" in result.stderr


def test_depth_belongs_to_diff_alone() -> None:
    result = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--variant", "rope", "--depth", "2", "--text",
                             "a b"], capture_output=True, text=True, timeout=limit(120))
    assert result.returncode == 2 and result.stderr.strip() == (
        "attn-tui: error: --depth does not apply to rope: it belongs to diff")


@pytest.mark.slow
def test_the_cli_lists_the_stages_and_writes_json() -> None:
    result = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--variant", "diff", "--text", "a b c",
                             "--heads", "2", "--depth", "2", "--format", "json"], capture_output=True, text=True,
                            timeout=limit(120))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    text = json.dumps(data, ensure_ascii=False)
    assert "diff_weights" in text and "head_norm" in text and "lambda" in text


def _explained(language: str, stage: str, keys: tuple[str, ...]) -> str:
    from attn_tui import i18n
    from attn_tui.present.explanations import explanation

    i18n.set_language(language)
    try:
        return explanation(stage, keys)
    finally:
        i18n.set_language("en")


def test_every_stage_has_an_explanation_and_a_formula_in_both_languages() -> None:
    from attn_tui import i18n

    trace = compute(REQUESTS["sentence_causal_padding"])
    for name in trace.names():
        english, korean = _explained("en", name, trace.meta.explains), _explained("ko", name, trace.meta.explains)
        assert english.count(".") >= 2 and any("\uac00" <= ch <= "\ud7a3" for ch in korean), name
    i18n.set_language("ko")
    try:
        formulas = {stage.name: str(stage.formula) for stage in trace}
    finally:
        i18n.set_language("en")
    assert "마스크" in formulas["masked_1"] and "음수" in formulas["diff_weights"]
    assert "DiffLlama" in _explained("en", "diff_weights", ("diffllama", "llama", "rope", "gqa"))
    assert "DiffLlama" not in _explained("en", "diff_weights", ("diff",))


@pytest.mark.parametrize("extra", [{}, {"softcap": 0.8, "qk_norm": "rms", "gate": True}])
def test_a_long_input_is_read_by_tiles_and_equals_the_whole_computation(extra: dict) -> None:
    request = sentence(" ".join(f"w{i}" for i in range(90)) + " <pad>", variant="diff", heads=2, dim=8,
                       mask="causal+padding", dtype="float64", **extra)
    whole, tiles = compute(request, lazy=False), compute(request, lazy=True)
    assert whole.names() == tiles.names() and whole.warnings == tiles.warnings
    lazy = {place.name for place, stage in tiles.stages.items() if stage.lazy}
    assert {"scores_1", "masked_2", "weights_1", "weights_2", "diff_weights"} <= lazy
    for place, stage in whole.stages.items():
        torch.testing.assert_close(tiles.stages[place].tensor, stage.tensor, atol=1e-12, rtol=0,
                                   msg=place.key)  # equal infinities (the masked cells) compare equal
    for name in ("diff_weights", "weights_2", "masked_1"):  # the inspector reads a lazy cell as any other
        arithmetic = explain(tiles, tiles.stage(name, head=1).place, (50, 20))
        assert arithmetic.matches, name


def test_a_long_input_opens_lazily_without_being_asked_and_keeps_the_signed_range() -> None:
    trace = compute(sentence(" ".join(f"w{i}" for i in range(300)), variant="diff", heads=2, dim=8, mask="causal"))
    stage = trace.stage("diff_weights", head=0)
    assert stage.lazy and tuple(stage.shape) == (300, 300)
    found = trace.stats[stage.place]  # the streaming pass folded the range: the colour scale needs no whole stage
    assert found.lo < 0 < found.hi
    rows = stage.data[0:300, 0:300].sum(dim=-1)
    lam = float(trace.tensor("lambda", head=0)[0, 3])
    assert torch.allclose(rows, torch.full_like(rows, 1 - lam), atol=1e-5)  # rows sum to 1 − λ, as whole
