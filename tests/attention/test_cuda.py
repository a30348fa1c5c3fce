"""The CUDA path against the CPU path: every variant, the half dtypes, real models and the recorder.

These run only where torch sees a GPU (never in CI, which has none); the device tool runs them
on a lent machine. Each compares what the GPU computed with the same ask on the CPU, stage by stage.
"""

from __future__ import annotations

import pytest
import torch

import attn_tui
from attn_tui.ask.variants import VARIANTS

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"), pytest.mark.cuda]

SENTENCE = "나는 어제 학교에 갔다 <pad>"
OPTIONS: dict[str, dict[str, object]] = {
    "multihead": {"heads": 2}, "gqa": {"heads": 4, "kv_heads": 2}, "alibi": {"heads": 2}, "sink": {"heads": 2},
    "flash": {"tile": 2}, "linear": {"mask": "causal"},  # linear: causal by its recurrence, no padding mask
}


def _pairs(variant: str, **settings: object) -> tuple[attn_tui.Trace, attn_tui.Trace]:
    ask = {"variant": variant, "mask": "causal+padding", "dim": 8, **OPTIONS.get(variant, {}), **settings}
    return (attn_tui.compute(SENTENCE, device="cpu", **ask),  # type: ignore[arg-type]
            attn_tui.compute(SENTENCE, device="cuda", **ask))  # type: ignore[arg-type]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_every_stage_of_every_variant_on_cuda_equals_the_cpu(variant: str) -> None:
    cpu, gpu = _pairs(variant)
    assert gpu.device.startswith("cuda") and cpu.device == "cpu"
    assert [s.key for s in gpu] == [s.key for s in cpu]
    for ours, reference in zip(gpu, cpu, strict=True):
        got = ours.tensor.cpu()
        finite = torch.isfinite(reference.tensor)
        assert torch.equal(torch.isfinite(got), finite), ours.key
        assert torch.allclose(got[finite], reference.tensor[finite], atol=1e-4, rtol=1e-4), ours.key
    assert [str(w) for w in gpu.warnings] == [str(w) for w in cpu.warnings]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("variant", ["scaled_dot", "multihead", "rope", "flash"])
def test_half_dtypes_on_cuda_stay_close_to_float32_and_softmax_in_float32(variant: str, dtype: str) -> None:
    full = attn_tui.compute(SENTENCE, device="cuda", variant=variant, mask="causal", dim=8,
                            **OPTIONS.get(variant, {}))  # type: ignore[arg-type]
    half = attn_tui.compute(SENTENCE, device="cuda", variant=variant, mask="causal", dim=8, dtype=dtype,
                            **OPTIONS.get(variant, {}))  # type: ignore[arg-type]
    name = "weights" if "weights" in half.names() else "output"
    for ours, reference in zip((s for s in half if s.name == name), (s for s in full if s.name == name),
                               strict=True):
        assert name == "output" or ours.tensor.dtype in (torch.float32, torch.float64)  # softmax in float32
        assert torch.allclose(ours.tensor.float().cpu(), reference.tensor.cpu(), atol=3e-2), ours.key


def test_the_recorder_records_sdpa_on_cuda_bit_for_bit() -> None:
    torch.manual_seed(0)
    q, k, v = (torch.randn(1, 2, 3, 4, device="cuda") for _ in range(3))
    with attn_tui.record(tokens=["나는", "학교에", "간다"]) as rec:
        out = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
    trace = rec.trace
    for head in range(2):
        assert torch.equal(trace.tensor("output", head=head).to(out.device), out[0, head])
        reference = torch.softmax((q[0, head] @ k[0, head].T / 2).masked_fill(
            ~torch.ones(3, 3, dtype=torch.bool, device="cuda").tril(), float("-inf")), -1)
        assert torch.allclose(trace.tensor("weights", head=head).to(out.device), reference, atol=1e-5)


def test_a_tiny_gpt2_on_cuda_equals_its_output_attentions(tmp_path) -> None:
    transformers = pytest.importorskip("transformers")
    from tests.sources.test_hf import _tiny_gpt2

    path = _tiny_gpt2(tmp_path)
    trace = attn_tui.compute("the cat sat on the mat", model=path, device="cuda")
    model = transformers.GPT2Model.from_pretrained(path, attn_implementation="eager").eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    with torch.no_grad():
        reference = model(**tokenizer("the cat sat on the mat", return_tensors="pt"),
                          output_attentions=True).attentions
    assert trace.device.startswith("cuda")
    for layer in range(2):
        for head in range(4):
            ours = trace.tensor("weights", layer, head).cpu()
            assert (ours - reference[layer][0, head]).abs().max() <= 1e-5, (layer, head)


def test_a_long_input_streams_in_large_blocks_on_cuda_and_equals_the_cpu() -> None:
    text = " ".join(f"w{i % 300}" for i in range(3000))  # long enough for lazy stages, several GPU blocks
    cpu, gpu = (attn_tui.compute(text, device=device, variant="alibi", heads=2, mask="causal", dim=16)
                for device in ("cpu", "cuda"))
    for head in range(2):
        assert gpu.stage("weights", head=head).lazy and cpu.stage("weights", head=head).lazy
        torch.testing.assert_close(gpu.stage("weights", head=head).data[1000:1100, 900:1000].cpu(),
                                   cpu.stage("weights", head=head).data[1000:1100, 900:1000], atol=1e-5, rtol=0)
        torch.testing.assert_close(gpu.tensor("output", head=head).cpu(), cpu.tensor("output", head=head), atol=1e-4,
                                   rtol=1e-4)
        ours, theirs = (t.stats[t.stage("weights", head=head).place] for t in (gpu, cpu))
        assert (ours.lo, ours.hi) == pytest.approx((theirs.lo, theirs.hi), abs=1e-6)
        assert (ours.masked, ours.empty_rows, ours.nan) == (theirs.masked, theirs.empty_rows, theirs.nan)
