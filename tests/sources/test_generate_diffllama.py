"""DiffLlama writes with its pairs per step: each step's λ, difference map and concat (what o_proj reads) are the
matching rows of one full causal forward over prompt + written, and the ids are transformers' greedy `generate`."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.sources import run
from tests.sources.test_diffllama import CONFIG
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

WRITE = 3


def test_diffllama_steps_show_both_maps_lambda_and_the_difference_as_its_prompt_does(tmp_path: Path) -> None:
    import transformers

    path = tiny(tmp_path, "diffllama", CONFIG)
    trace = run(ModelAsk(str(path), TEXT, generate=WRITE)).trace
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, attn_implementation="eager").eval()
    prompt = tokenizer(TEXT, return_tensors="pt")["input_ids"]  # (1, P)
    p = prompt.shape[1]
    with torch.no_grad():
        expected = model.generate(prompt, max_new_tokens=WRITE, do_sample=False)[0, p:].tolist()
    assert list(trace.meta.generated_ids) == expected  # type: ignore[union-attr]
    seen: list[torch.Tensor] = []
    hooks = [layer.self_attn.o_proj.register_forward_hook(lambda _m, args, _o: seen.append(args[0][0]))
             for layer in model.model.layers]
    with torch.no_grad():
        full = model(torch.tensor([prompt[0].tolist() + expected]), output_attentions=True).attentions
    for hook in hooks:
        hook.remove()
    for t in range(WRITE):
        rows = slice(0, p) if t == 0 else slice(p + t - 1, p + t)
        keys = p + t if t else p
        for layer in range(trace.layers):
            lam = trace.tensor("lambda", layer, 0, t)[0]
            for pair in range(2):  # heads 0 and 2, 1 and 3
                diff = full[layer][0, pair, rows, :keys] - lam[3] * full[layer][0, pair + 2, rows, :keys]
                torch.testing.assert_close(trace.tensor("diff_weights", layer, pair, t), diff, atol=1e-5, rtol=0)
            torch.testing.assert_close(trace.tensor("concat", layer, None, t), seen[layer][rows], atol=1e-5, rtol=0)
