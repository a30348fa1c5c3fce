"""Every causal family writes: each step's weights (computed from the new row alone and the keys kept from the
steps before) are the rows of one full causal forward, and the step's other stages, traced only when asked for,
are the tracer's own and give those same weights."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from attn_tui.trace.ops import Place
from tests.sources.test_families import CONFIGS as FORWARD
from tests.sources.test_families_decoders import CONFIGS as DECODERS
from tests.sources.test_families_fused import CONFIGS as FUSED
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

CAUSAL: dict[str, dict[str, Any]] = {**{t: FORWARD[t] for t in ("gpt2", "gemma2")}, **DECODERS, **FUSED}
WRITE = 4


@pytest.mark.parametrize("model_type", sorted(CAUSAL))
def test_every_family_writes_rows_of_one_full_forward_and_traces_the_rest_when_asked(tmp_path: Path,
                                                                                     model_type: str) -> None:
    import transformers

    path = tiny(tmp_path, model_type, CAUSAL[model_type])
    trace = run(ModelAsk(str(path), TEXT, generate=WRITE)).trace
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    prompt = tokenizer(TEXT, return_tensors="pt")["input_ids"][0].tolist()
    written = list(trace.meta.generated_ids)  # type: ignore[union-attr]
    p = len(prompt)
    with torch.no_grad():
        full = model(torch.tensor([prompt + written]), output_attentions=True).attentions  # (1, H, N, N) each
    assert trace.step_filler is not None
    for t in range(1, trace.steps()):
        for layer in range(trace.layers):
            assert Place("scores", layer, 0, t) not in trace.stages  # not traced until asked for
            for head in range(trace.heads):
                shown = trace.stages[Place("weights", layer, head, t)].tensor  # (1, p + t)
                torch.testing.assert_close(shown, full[layer][0, head, p + t - 1:p + t, :p + t], atol=1e-5, rtol=0)
            masked = trace.tensor("masked", layer, trace.heads - 1, t)  # traced now, by the shared tracer
            again = torch.softmax(masked, dim=-1)
            torch.testing.assert_close(again, trace.tensor("weights", layer, trace.heads - 1, t), atol=1e-6, rtol=0)
            assert trace.stage("cache_keys", layer, 0, t).shape[1] == trace.stage("key", layer, 0, t).shape[1]


@pytest.mark.parametrize("model_type", ["gpt2", "phi3", "gpt_neox"])
def test_streamingllm_is_refused_in_one_line_before_writing_where_keys_do_not_turn_rotate_half(
        tmp_path: Path, model_type: str) -> None:
    from attn_tui.errors import ConfigError

    path = tiny(tmp_path, model_type, CAUSAL[model_type])  # absolute positions; half of each head turned
    with pytest.raises(ConfigError) as refused:
        run(ModelAsk(str(path), TEXT, generate=2, cache="window:4,sinks:1"))
    message = str(refused.value)
    assert "no rotate-half rotary embedding" in message and "\n" not in message


@pytest.mark.parametrize("model_type", sorted(set(CAUSAL) - {"gpt2", "phi3", "gpt_neox"}))
def test_streamingllm_writes_with_every_rotate_half_family(tmp_path: Path, model_type: str) -> None:
    path = tiny(tmp_path, model_type, CAUSAL[model_type])
    whole = run(ModelAsk(str(path), TEXT, generate=3)).trace
    window = run(ModelAsk(str(path), TEXT, generate=3, cache="window:4,sinks:1")).trace
    # the prefill reads the prompt whole either way: the first token is the same
    assert window.meta.generated_ids[0] == whole.meta.generated_ids[0]  # type: ignore[union-attr]
    for t in (1, 2):
        for layer in range(window.layers):
            row = window.tensor("weights", layer, 0, t)  # the sink and the last 4: five keys
            assert row.shape == (1, 5) and abs(float(row.sum()) - 1) < 1e-5
