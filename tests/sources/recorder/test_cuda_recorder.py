"""The recorder on a GPU, where the fused kernels are real: a Hugging Face model's default sdpa forward (the
memory-efficient kernel in float32, flash in bfloat16) and flex_attention compiled by Triton, recorded and
held against eager attention and dense float64 references. Runs only where torch sees CUDA (the device tool)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

import attn_tui
from tests.sources.recorder import flex_mods as fm
from tests.sources.recorder.test_hf_default import CONFIGS, PATHS, gaps, weights_of
from tests.sources.tiny_models import TEXT, reference, tiny

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"), pytest.mark.cuda,
              pytest.mark.models]
transformers = pytest.importorskip("transformers")
flex = pytest.importorskip("torch.nn.attention.flex_attention")


@pytest.mark.parametrize("family", ["llama", "gemma3_text", "gpt2"])
def test_a_default_sdpa_model_on_cuda_is_recorded_with_its_eager_weights(tmp_path: Path, family: str) -> None:
    path = tiny(tmp_path, family, CONFIGS[family])
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, trust_remote_code=False).cuda().eval()
    assert model.config._attn_implementation == "sdpa"
    with torch.no_grad(), attn_tui.record() as rec:
        model(**tokenizer(TEXT, return_tensors="pt").to("cuda"))
    trace = rec.trace
    eager = reference(path)  # on the CPU, eager attention, output_attentions=True
    assert trace.meta.modules == tuple(PATHS[family].format(i=i) for i in range(len(eager)))
    for module, expected in zip(trace.meta.modules, eager):
        torch.testing.assert_close(weights_of(trace, module, expected.shape[0]).cpu(), expected, atol=1e-5, rtol=0)
    assert max(gaps(trace)) <= 1e-5


def test_a_bfloat16_model_on_cuda_runs_flash_and_the_trace_says_how_far_the_kernel_is(tmp_path: Path) -> None:
    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.bfloat16,
                                                              trust_remote_code=False).cuda().eval()
    with torch.no_grad(), attn_tui.record() as rec:
        model(**tokenizer(TEXT, return_tensors="pt").to("cuda"))
    trace = rec.trace
    eager = reference(path)
    for module, expected in zip(trace.meta.modules, eager):
        got = weights_of(trace, module, expected.shape[0]).float().cpu()
        assert (got - expected).abs().max() <= 5e-2, module  # bfloat16 weights and activations
    said = gaps(trace)
    assert all(0 <= gap <= 0.1 for gap in said)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "compiled"])
@pytest.mark.parametrize("case", [c for c in fm.CASES if c.name in ("soft_cap", "causal", "sliding_window")],
                         ids=lambda c: c.name)
def test_flex_attention_on_cuda_is_recorded_and_equals_its_float64_reference(case: fm.Case, compiled: bool) -> None:
    warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(fm.B, fm.H, fm.L, 16, generator=g) for _ in range(3))  # Triton's flex wants d ≥ 16
    block_mask = None if case.mask_mod is None else flex.create_block_mask(
        case.mask_mod, fm.B, fm.H, fm.L, fm.L, device="cuda", BLOCK_SIZE=128)
    with attn_tui.record() as rec:
        call = torch.compile(flex.flex_attention) if compiled else flex.flex_attention  # the recording's own
        out = call(q.cuda(), k.cuda(), v.cuda(), score_mod=case.score_mod, block_mask=block_mask, scale=0.3)
    trace = rec.trace
    expected = fm.reference(q, k, v, case, 0.3)
    for b in range(fm.B):
        for h in range(fm.H):
            stage = trace.stage("weights", head=h, step=b)
            weights = (stage.data[:, :] if stage.lazy else stage.tensor).double().cpu()
            torch.testing.assert_close(weights, expected["weights"][b, h], atol=1e-5, rtol=0)
            recorded = trace.stage("output", head=h, step=b).tensor
            assert torch.equal(recorded.to(out.device), out[b, h])  # the call's own output, bit for bit
            torch.testing.assert_close(out[b, h].double().cpu(), expected["output"][b, h], atol=1e-4, rtol=0)
