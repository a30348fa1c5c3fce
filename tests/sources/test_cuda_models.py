"""Every model family, a model writing, and a StreamingLLM window on a GPU against the same ask on the CPU, stage by
stage; the families' weights against transformers' own. Runs only where torch sees CUDA (the device tool)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from attn_tui.trace.stage import Stage, Trace
from attn_tui.trace.written import written_rows
from tests.sources import test_generate
from tests.sources.tiny_models import CONFIGS, TEXT, reference, tiny

pytestmark = [pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA"), pytest.mark.cuda,
              pytest.mark.models]
pytest.importorskip("transformers")
NO_WEIGHTS = {"qwen3_next"}  # its linear layers return no attention weights to compare with


def _whole(stage: Stage) -> torch.Tensor:
    return (stage.data[:, :] if stage.lazy and stage.data.dim() == 2 else stage.tensor).cpu()


def _same_stages(gpu: Trace, cpu: Trace) -> None:
    assert gpu.device.startswith("cuda") and cpu.device == "cpu"
    assert [s.key for s in gpu] == [s.key for s in cpu]
    for ours, theirs in zip(gpu, cpu, strict=True):
        got, expected = _whole(ours), _whole(theirs)
        finite = torch.isfinite(expected)
        assert torch.equal(torch.isfinite(got), finite), ours.key
        torch.testing.assert_close(got[finite].double(), expected[finite].double(), atol=1e-4, rtol=1e-4,
                                   msg=lambda m, key=ours.key: f"{key}: {m}")


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_stage_of_every_family_on_cuda_equals_the_cpu_and_its_weights_transformers(tmp_path: Path,
                                                                                         model_type: str) -> None:
    path = str(tiny(tmp_path, model_type, CONFIGS[model_type]))
    gpu, cpu = (run(ModelAsk(path, TEXT, device=device)).trace for device in ("cuda", "cpu"))
    _same_stages(gpu, cpu)
    if model_type in NO_WEIGHTS:
        return
    for layer, expected in enumerate(reference(Path(path))):
        for head in range(gpu.heads):
            torch.testing.assert_close(gpu.tensor("weights", layer, head).cpu(), expected[head], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("model_type", sorted(test_generate.CONFIGS))
def test_writing_on_cuda_writes_the_cpus_tokens_and_every_steps_rows(tmp_path: Path, model_type: str) -> None:
    path = str(tiny(tmp_path, model_type, test_generate.CONFIGS[model_type]))
    gpu, cpu = (run(ModelAsk(path, TEXT, generate=test_generate.WRITE, device=device)).trace
                for device in ("cuda", "cpu"))
    assert gpu.meta.generated_ids == cpu.meta.generated_ids  # type: ignore[union-attr]
    for layer in range(gpu.layers):
        for head in range(gpu.heads):
            torch.testing.assert_close(written_rows(gpu, "weights", layer, head).cpu(),
                                       written_rows(cpu, "weights", layer, head), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("model_type", ["deepseek_v3", "qwen3_next", "diffllama"])
def test_a_cache_of_its_own_writes_on_cuda_as_on_the_cpu(tmp_path: Path, model_type: str) -> None:
    """DeepSeek's latent cache, Qwen3-Next's state and DiffLlama's pairs, written on the GPU: the CPU's tokens,
    and every stage published as the steps were written (the weights rows, the caches, the states) the same."""
    path = str(tiny(tmp_path, model_type, CONFIGS[model_type]))
    gpu, cpu = (run(ModelAsk(path, TEXT, generate=3, device=device)).trace for device in ("cuda", "cpu"))
    assert gpu.meta.generated_ids == cpu.meta.generated_ids  # type: ignore[union-attr]
    _same_stages(gpu, cpu)


def test_a_streaming_window_on_cuda_equals_the_cpus(tmp_path: Path) -> None:
    path = str(tiny(tmp_path, "llama", test_generate.CONFIGS["llama"]))
    gpu, cpu = (run(ModelAsk(path, TEXT, generate=test_generate.WRITE, cache="window:4,sinks:2",
                               device=device)).trace for device in ("cuda", "cpu"))
    assert gpu.meta.generated_ids == cpu.meta.generated_ids  # type: ignore[union-attr]
    _same_stages(gpu, cpu)
