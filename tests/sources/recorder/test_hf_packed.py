"""Hugging Face models as they run by default, where the kernel's call hides the model's shape or dtype: decode
steps of a grouped-query model whose query heads transformers folds into the query axis (`pack_gqa`), shown as
the model's heads of one query each; and bfloat16 calls, whose kernel output differs from A·V only by bfloat16
rounding, with no warning that the weights may not be the kernel's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F

pytest.importorskip("transformers")

import transformers

import attn_tui
from attn_tui.trace.stage import Trace
from tests.sources.tiny_models import SMALL, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

TEXTS = ["the cat sat on the mat", "a dog"]  # the second is left-padded by 4 in a batch of both
NEW = 4  # tokens generate() adds: one prefill call and three decode calls per layer and batch item
HEADS = 4


def weights_of(trace: Trace, module: str, step: int) -> torch.Tensor:
    return torch.stack([trace.tensor("weights", head=h, module=module, step=step) for h in range(HEADS)])


def generated(path: Path, implementation: str | None, **extra: Any) -> Any:
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    tokenizer.padding_side = "left"
    named = {} if implementation is None else {"attn_implementation": implementation}
    model = transformers.AutoModelForCausalLM.from_pretrained(path, **named).eval()
    assert implementation or model.config._attn_implementation == "sdpa"
    batch = tokenizer(TEXTS, return_tensors="pt", padding=True, return_token_type_ids=False)
    with torch.no_grad():
        out = model.generate(**batch, max_new_tokens=NEW, do_sample=False, pad_token_id=0, **extra)
    return batch["attention_mask"].bool(), out


@pytest.mark.parametrize(("family", "config"), [
    ("llama", dict(SMALL, num_key_value_heads=2)),  # 2 query heads per key/value head
    ("mistral", dict(SMALL, num_key_value_heads=1, sliding_window=4)),  # one key/value head, a window under the text
])
def test_every_generate_step_of_a_padded_gqa_batch_shows_the_models_heads(tmp_path: Path, family: str,
                                                                         config: dict[str, Any]) -> None:
    path = tiny(tmp_path, family, config)
    real, eager = generated(path, "eager", output_attentions=True, return_dict_in_generate=True)
    seen: list[tuple[tuple[int, ...], bool]] = []
    kernel = F.scaled_dot_product_attention

    def spy(query: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        seen.append((tuple(query.shape), kwargs.get("attn_mask") is not None))
        return kernel(query, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(F, "scaled_dot_product_attention", spy)
        with attn_tui.record() as rec:
            _, tokens = generated(path, None)
    assert torch.equal(tokens, eager.sequences)
    packed = [shape for shape, masked in seen if shape[-2] > 1 and shape[1] < HEADS]
    assert packed and all(masked for _, masked in seen[2:]), seen  # the kernel did get folded heads and a mask
    trace = rec.trace
    assert not [w for w in trace.warnings if "kernel" in str(w)]
    for call in range(NEW):
        for item in range(len(TEXTS)):
            step = call * len(TEXTS) + item
            for layer, module in enumerate(trace.meta.modules):
                shown = weights_of(trace, module, step)
                expected = eager.attentions[call][layer][item]  # (heads, L, S): 1 query row in a decode step
                assert shown.shape == expected.shape, (step, module)
                rows = real[item][-expected.shape[-2]:] if call == 0 else slice(None)  # padding rows: not compared
                torch.testing.assert_close(shown[:, rows], expected[:, rows], atol=1e-5, rtol=0)
                if call:  # the kernel's own output row of each head, beside A·V
                    assert trace.stage("output", head=HEADS - 1, module=module, step=step).shape[0] == 1


def test_a_bfloat16_model_is_recorded_with_no_warning_about_its_kernel(tmp_path: Path) -> None:
    path = tiny(tmp_path, "llama", dict(SMALL, num_key_value_heads=2))
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    batch = tokenizer(TEXTS, return_tensors="pt", padding=True, return_token_type_ids=False)
    model = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16).eval()
    eager = transformers.AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16,
                                                              attn_implementation="eager").eval()
    with torch.no_grad():
        expected = eager(**batch, output_attentions=True).attentions
        with attn_tui.record() as rec:
            model(**batch)
    trace = rec.trace
    assert trace.tensor("output", head=0, module=trace.meta.modules[0], step=0).dtype == torch.bfloat16
    assert not [w for w in trace.warnings if "kernel" in str(w)], trace.warnings
    real = batch["attention_mask"].bool()
    for layer, module in enumerate(trace.meta.modules):
        for item in range(len(TEXTS)):
            rows = real[item]
            shown, wanted = weights_of(trace, module, item).float(), expected[layer][item].float()
            torch.testing.assert_close(shown[:, rows], wanted[:, rows], atol=2 ** -7, rtol=0)  # bf16's own rounding
