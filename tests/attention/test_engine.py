"""Engine behaviour beyond parity: stage lists, masks, dtypes, devices, warnings, errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch

from attn_tui.ask.budget import BudgetError
from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.attention.positional import sinusoidal
from attn_tui.errors import ConfigError, DeviceError, InputError, ShapeError
from attn_tui.io.export import stage_to_csv, trace_to_json
from attn_tui.trace import masks
from tests.conftest import matrices, sentence, x_matrix

DESIGN_STAGES = {
    "dot": ["query", "key", "value", "scores", "masked", "weights", "output"],
    "scaled_dot": ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"],
    "general": ["query", "key", "value", "query_proj", "scores", "masked", "weights", "output"],
    "additive": ["query", "key", "value", "query_proj", "key_proj", "energy", "scores", "masked", "weights",
                 "output"],
    "concat": ["query", "key", "value", "energy", "scores", "masked", "weights", "output"],
    "multihead": ["qkv_proj", "query", "key", "value", "scores", "scaled", "masked", "weights", "output",
                  "concat", "projected"],
}


@pytest.mark.parametrize("variant", list(DESIGN_STAGES))
def test_stage_names_follow_design(variant: str) -> None:
    assert list(VARIANTS[variant].stages) == DESIGN_STAGES[variant]
    plain = compute(sentence("a b c", variant=variant, dim=4))
    assert plain.names() == ["embedding"] + DESIGN_STAGES[variant]
    with_pe = compute(sentence("a b c", variant=variant, dim=4, positional=True))
    assert with_pe.names() == ["embedding", "positional", "embedded_pos"] + DESIGN_STAGES[variant]
    assert all(stage.formula for stage in with_pe)


def test_multihead_per_head_stages_and_energy_axes() -> None:
    trace = compute(sentence("a b c d", variant="multihead", heads=2, dim=6))
    assert [s.head for s in trace if s.name == "weights"] == [0, 1]
    assert trace.stage("weights", head=1).shape == (4, 4)
    assert trace.stage("query", head=1).shape == (4, 3)
    energy = compute(sentence("a b c", variant="additive", dim=5)).stage("energy")
    assert energy.shape == (3, 3, 5)
    assert [a.name for a in energy.axes] == ["query", "key", "hidden"]


def test_seeded_and_deterministic_and_same_word_same_vector() -> None:
    a = compute(sentence("나는 학교에 간다", seed=7))
    b = compute(sentence("나는 학교에 간다", seed=7))
    c = compute(sentence("나는 학교에 간다", seed=8))
    assert torch.equal(a.tensor("output"), b.tensor("output"))
    assert not torch.equal(a.tensor("output"), c.tensor("output"))
    other = compute(sentence("간다 나는", seed=7))
    assert torch.equal(other.tensor("embedding")[1], a.tensor("embedding")[0])


def test_pad_token_embeds_to_zero() -> None:
    trace = compute(sentence("a <pad>"))
    assert torch.equal(trace.tensor("embedding")[1].cpu(), torch.zeros(8))


def test_positional_encoding_formula() -> None:
    pe = sinusoidal(5, 6, torch.float64)
    assert pe[3, 2] == pytest.approx(torch.sin(torch.tensor(3 / 10000 ** (2 / 6), dtype=torch.float64)).item())
    assert pe[3, 3] == pytest.approx(torch.cos(torch.tensor(3 / 10000 ** (2 / 6), dtype=torch.float64)).item())
    assert sinusoidal(4, 5).shape == (4, 5)  # odd widths work


def test_masks_build_the_sdpa_convention() -> None:
    tokens = ("a", "b", "<pad>")
    assert masks.build_mask("none", tokens, 3) is None  # <pad> is masked only by the padding kinds
    causal = masks.build_mask("causal", ("a", "b", "c"), 3)
    assert causal.allowed.tolist() == [[True, False, False], [True, True, False], [True, True, True]]
    padding = masks.build_mask("padding", tokens, 2)
    assert padding.allowed.tolist() == [[True, True, False], [True, True, False]]
    both = masks.build_mask("causal+padding", ("a", "b", "c"), 3, pad_keys=1)
    assert both.allowed.tolist() == [[True, False, False], [True, True, False], [True, True, False]]
    assert both.describe() == "causal + padding" and both.reasons(0, 2) == [
        "future key: key 2 comes after query 0 (causal: no looking ahead)", "<pad> key: key 2 is padding"]


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
def test_mask_and_softmax_run_in_at_least_float32(dtype: str, lookup_qkv) -> None:
    trace = compute(matrices(*lookup_qkv, dtype=dtype))
    assert trace.tensor("scores").dtype == getattr(torch, dtype)
    expected = torch.float64 if dtype == "float64" else torch.float32
    assert trace.tensor("masked").dtype == trace.tensor("weights").dtype == expected
    expected = torch.tensor([[0, 1, 0, 0], [0, 0, .5, .5], [.5, .5, 0, 0.]])
    assert torch.allclose(trace.tensor("weights").float(), expected,
                          atol=1e-3)


def test_float64_keeps_what_float32_cannot_hold() -> None:
    """1e39 overflows float32 but not float64: the float64 trace stays finite and equals SDPA in float64."""
    q, k, v = [[1e39, 0.0]], [[1.0, 0.0], [0.5, 0.0]], [[1.0], [2.0]]
    trace = compute(matrices(q, k, v, dtype="float64"))
    assert not trace.warnings
    tq, tk, tv = (torch.tensor(m, dtype=torch.float64) for m in (q, k, v))
    assert torch.equal(trace.tensor("output"), torch.nn.functional.scaled_dot_product_attention(tq, tk, tv))


def test_temperature_overflow_and_underflow_are_named() -> None:
    hot = compute(matrices([[1.0, 2.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]], temperature=1e-300))
    assert any("masked" in w and "temperature" in w and "overflowed" in w for w in hot.warnings)
    assert any("NaN" in w and "masked" in w for w in hot.warnings)
    cold = compute(matrices([[1.0, 2.0]], [[1.0, 0.0], [0.0, 1.0]], [[1.0], [2.0]], temperature=1e300))
    assert any("underflowed" in w for w in cold.warnings)


def test_float16_overflow_is_reported_not_hidden() -> None:
    q = [[300.0, 300.0]]
    trace = compute(matrices(q, [[300.0, 300.0], [1.0, 1.0]], [[1.0], [2.0]], variant="dot", dtype="float16"))
    assert any("scores" in w and "overflowed" in w for w in trace.warnings)
    assert any("NaN" in w for w in trace.warnings)  # inf − inf in softmax: reported, never silent


def test_minus_1e9_fill_survives_float16() -> None:
    trace = compute(sentence("a b c", mask="causal", mask_fill="-1e9", dtype="float16"))
    masked = trace.tensor("masked")
    assert masked[0, 1].item() == -1e9
    assert not torch.isnan(trace.tensor("weights")).any()


def test_temperature_divides_the_scores() -> None:
    hot = compute(sentence("a b c", temperature=2.0))
    cold = compute(sentence("a b c"))
    assert torch.allclose(hot.tensor("masked"), cold.tensor("scaled") / 2)
    assert "T = 2" in hot.stage("masked").formula


def test_cuda_without_cuda_is_a_clear_error() -> None:
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(DeviceError, match="CUDA was asked for but none is available"):
        compute(sentence("a b", device="cuda"))
    assert compute(sentence("a b", device="auto")).device == "cpu"


@pytest.mark.parametrize("request_,error,fragment", [
    (sentence("a b c", variant="multihead", heads=3, dim=8), ConfigError, "--heads 3 does not divide"),
    (matrices([[1, 2]], [[1, 2, 3]], [[1]]), ShapeError, "Q is 1×2 but K is 1×3"),
    (matrices([[1, 2]], [[1, 2]], [[1], [2]]), ShapeError, "K is 1×2 but V is 2×1"),
    (matrices([[1, 2]], [[1, 2]], [[1]], custom_mask=[[1, 0]]), ShapeError, "the mask is 1×2 but the scores are 1×1"),
    (matrices([[1, 2]], [[1, 2]], [[1]], custom_mask=[[0.5]]), ShapeError, "use 1 where a query may attend"),
    (matrices([[1, 2]], [[1, 2]], [[1]], mask="padding", pad_keys=2), ConfigError, "--pad-keys 2 is outside 0..1"),
    (matrices([[1, 2]], [[1, 2]], [[1]], variant="multihead"), InputError, "give one X matrix"),
    (sentence("a", temperature=0.0), ConfigError, "temperature must be a positive"),
    (sentence(" "), InputError, "sentence is empty"),
])
def test_bad_settings_raise_named_errors(request_, error, fragment: str) -> None:
    with pytest.raises(error, match=fragment):
        compute(request_)


def test_huge_inputs_are_refused_before_allocating() -> None:
    """A block of 64 rows × 3000 keys × 2048 hidden units of energy is 1.5 GB: over a 256 MB limit."""
    with pytest.raises(BudgetError, match=r"energy, .* GB\); the limit is 256.0 MB"):
        compute(sentence(" ".join(["w"] * 3000), variant="additive", dim=2048), max_memory=256 * 1024**2)
    with pytest.raises(ConfigError, match="16000 numbers wide"):
        compute(x_matrix([[0.5] * 16000], variant="multihead", heads=1))


def test_json_export_is_standard_json_with_strings_for_infinities() -> None:
    trace = compute(sentence("a b c", mask="causal"))
    doc = json.loads(trace_to_json(trace))
    masked = next(s for s in doc["stages"] if s["name"] == "masked")
    assert masked["data"][0][1] == "-inf"
    assert doc["mask"][0] == [1, 0, 0]
    assert "vocab" in doc and doc["params"]["W_q"]


def test_csv_export_has_labels() -> None:
    trace = compute(sentence("나는 학교에"))
    text = stage_to_csv(trace.stage("weights"))
    assert text.splitlines()[0] == "query,나는,학교에"
    assert text.splitlines()[1].startswith("나는,")


@pytest.mark.slow
def test_core_imports_without_textual_or_rich() -> None:
    code = ("import sys, attn_tui.attention.engine, attn_tui.io.export, attn_tui.ask.samples;"
            "bad = [m for m in ('textual', 'rich') if m in sys.modules]; print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.cuda
@pytest.mark.parametrize("variant", ["scaled_dot", "additive", "multihead"])
def test_cuda_matches_cpu(variant: str) -> None:
    cpu, gpu = (compute(sentence("나는 학교에 간다 <pad>", variant=variant, mask="causal+padding", device=device))
                for device in ("cpu", "cuda"))
    assert gpu.device.startswith("cuda")
    assert torch.allclose(gpu.tensor("weights").cpu(), cpu.tensor("weights"), atol=1e-5)
