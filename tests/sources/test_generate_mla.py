"""DeepSeek (multi-head latent attention) writes: each step's weights are the rows of one full causal forward, the
ids are transformers' greedy `generate`, and the cache shown is what MLA keeps: the normed latent and the turned
rotary key, a row a position, beside what full multi-head attention would keep."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.explain.cell import explain
from attn_tui.sources import run
from attn_tui.trace.ops import Place
from tests.sources.test_deepseek_v3 import CONFIGS, TYPES
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

WRITE = 4


def _hf(path: Path):  # type: ignore[no-untyped-def]
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    return tokenizer, model


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_mla_steps_are_rows_of_one_full_forward_the_ids_generates_and_the_cache_a_latent(tmp_path: Path,
                                                                                       name: str) -> None:
    path = tiny(tmp_path, TYPES.get(name, "deepseek_v3"), CONFIGS[name])
    trace = run(ModelAsk(str(path), TEXT, generate=WRITE)).trace
    tokenizer, model = _hf(path)
    prompt = tokenizer(TEXT, return_tensors="pt")["input_ids"]  # (1, P)
    p = prompt.shape[1]
    with torch.no_grad():
        expected = model.generate(prompt, max_new_tokens=WRITE, do_sample=False)[0, p:].tolist()
    assert list(trace.meta.generated_ids) == expected  # type: ignore[union-attr]
    with torch.no_grad():
        full = model(torch.tensor([prompt[0].tolist() + expected]), output_attentions=True).attentions
    cfg = CONFIGS[name]
    width = cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]
    for t in range(WRITE):
        rows = slice(0, p) if t == 0 else slice(p + t - 1, p + t)
        keys = p + t if t else p
        for layer in range(trace.layers):
            for head in range(trace.heads):
                shown = trace.tensor("weights", layer, head, t)
                torch.testing.assert_close(shown, full[layer][0, head, rows, :keys], atol=1e-5, rtol=0)
            cache = trace.stage("latent_cache", layer, None, t)
            assert cache.shape == (keys, width)  # one row a position: the latent, then the rotary key
            if t:  # the rows kept from before are the rows the prefill computed from the whole prompt
                torch.testing.assert_close(cache.tensor[:p], trace.tensor("latent_cache", layer, None, 0),
                                           atol=1e-6, rtol=0)
            said = str(cache.formula)
            assert "Full multi-head attention" in said and f"{keys} rows" in said
    # a later step's other stages, traced when asked, are the `mla` variant's and give the same weights
    step = WRITE - 1
    assert Place("scores", 0, 0, step) not in trace.stages
    again = torch.softmax(trace.tensor("masked", 0, 1, step), dim=-1)
    torch.testing.assert_close(again, trace.tensor("weights", 0, 1, step), atol=1e-6, rtol=0)
    assert trace.tensor("kv_latent_norm", 0, None, step).shape == (p + step, cfg["kv_lora_rank"])
    assert trace.tensor("query", 0, 0, step).shape[0] == 1  # the new token alone queries
    for place, stage in list(trace.stages.items()):  # the inspector recomputes every cell of the step's stages
        if place.layer != 0 or place.step != step or place.head not in (None, 1):
            continue
        for index in ((0, 0), (stage.data.shape[0] - 1, stage.data.shape[1] - 1)):
            found = explain(trace, place, index)
            assert found.matches, (place.key, index, found.lines)


def test_streamingllm_is_refused_in_one_line_for_a_latent_cache(tmp_path: Path) -> None:
    from attn_tui.errors import ConfigError

    path = tiny(tmp_path, "deepseek_v3", CONFIGS["interleaved"])
    with pytest.raises(ConfigError) as refused:
        run(ModelAsk(str(path), TEXT, generate=2, cache="window:4,sinks:1"))
    assert "caches a latent" in str(refused.value) and "\n" not in str(refused.value)
