"""Two models in one recording: a teacher and its student, a draft model run by `generate(assistant_model=…)`.

They often share every module path (`model.layers.0.self_attn`). The model whose attention ran first keeps its
plain paths; each other one's start with its class, numbered when the class is shared
(`LlamaForCausalLM#2:model.layers.0.self_attn`): every layer of both models is in the trace, with its own
weights. And a sampler's softmax over the vocabulary (`do_sample=True`) is no attention (recorder/logits.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from tests.sources.recorder.test_parity import every_cell_matches
from tests.sources.tiny_models import SMALL, TEXT, reference, tiny


class Attend(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.q, self.k = nn.Linear(dim, dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        weights = F.softmax(self.q(x) @ self.k(x).transpose(-2, -1), dim=-1)
        return weights @ x


class Block(nn.Module):
    def __init__(self, dim: int) -> None:
        super().__init__()
        self.attn = Attend(dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.attn(x)


class Encoder(nn.Module):
    """Two blocks: its attentions are `layers.0.attn` and `layers.1.attn`."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Block(dim) for _ in range(2)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


class Student(Encoder):
    """Another class with the very same paths."""


class Drafting(nn.Module):
    """Runs a draft model it does not hold (as generate runs its assistant_model), then its own layers."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        self.body = Encoder(dim)

    def propose(self, draft: nn.Module, x: torch.Tensor) -> torch.Tensor:
        return self.body(draft(x))


def own_weights(module: Attend, x: torch.Tensor) -> torch.Tensor:
    """The weights one attention computes on its input, by float64 products of its own parameters."""
    d = torch.float64
    q = x.to(d) @ module.q.weight.to(d).T + module.q.bias.to(d)
    k = x.to(d) @ module.k.weight.to(d).T + module.k.bias.to(d)
    return torch.softmax(q @ k.transpose(-2, -1), dim=-1)


def inputs_of(model: Encoder, x: torch.Tensor) -> list[torch.Tensor]:
    """The input of each block's attention, as the model runs."""
    seen = []
    for layer in model.layers:
        seen.append(x)
        x = layer(x)
    return seen


def test_two_models_with_the_same_paths_keep_every_layer_under_names_of_their_own() -> None:
    torch.manual_seed(0)
    teacher, student, other = Encoder(4), Encoder(4), Student(4)
    x = torch.randn(3, 4)
    with torch.no_grad(), attn_tui.record() as rec:
        teacher(x)
        student(x[:2])
        other(x)
    trace = rec.trace
    assert trace.meta.modules == ("layers.0.attn", "layers.1.attn", "Encoder#2:layers.0.attn",
                                  "Encoder#2:layers.1.attn", "Student:layers.0.attn", "Student:layers.1.attn")
    assert trace.meta.calls == (1,) * 6
    with torch.no_grad():
        for model, prefix, given in ((teacher, "", x), (student, "Encoder#2:", x[:2]), (other, "Student:", x)):
            for i, seen in enumerate(inputs_of(model, given)):
                expected = own_weights(model.layers[i].attn, seen)
                got = trace.tensor("weights", module=f"{prefix}layers.{i}.attn")
                torch.testing.assert_close(got.double(), expected, atol=1e-6, rtol=0)
    every_cell_matches(trace)


def test_a_model_run_from_inside_another_is_named_by_its_own_paths() -> None:
    torch.manual_seed(1)
    outer, draft = Drafting(4), Encoder(4)
    x = torch.randn(3, 4)
    with torch.no_grad(), attn_tui.record() as rec:
        outer.propose(draft, x)
    trace = rec.trace
    # the draft ran first, but the model whose method ran it keeps the plain paths: it is the one the code called
    assert trace.meta.modules == ("Encoder:layers.0.attn", "Encoder:layers.1.attn", "body.layers.0.attn",
                                  "body.layers.1.attn")
    with torch.no_grad():
        drafted = draft(x)
        for i, seen in enumerate(inputs_of(draft, x)):
            torch.testing.assert_close(trace.tensor("weights", module=f"Encoder:layers.{i}.attn").double(),
                                       own_weights(draft.layers[i].attn, seen), atol=1e-6, rtol=0)
        for i, seen in enumerate(inputs_of(outer.body, drafted)):
            torch.testing.assert_close(trace.tensor("weights", module=f"body.layers.{i}.attn").double(),
                                       own_weights(outer.body.layers[i].attn, seen), atol=1e-6, rtol=0)


def test_one_model_alone_and_one_model_twice_keep_their_plain_paths() -> None:
    torch.manual_seed(2)
    model = Encoder(4)
    with torch.no_grad(), attn_tui.record() as rec:
        model(torch.randn(3, 4))
        model(torch.randn(2, 4))
    trace = rec.trace
    assert trace.meta.modules == ("layers.0.attn", "layers.1.attn") and trace.meta.calls == (2, 2)


# ----- Hugging Face models, as a user's script runs them --------------------------------------------------------
def causal(path: Path) -> Any:
    import transformers

    return transformers.AutoModelForCausalLM.from_pretrained(path).eval()


def layer_weights(trace: Any, module: str, heads: int, step: int | None = None) -> torch.Tensor:
    return torch.stack([trace.tensor("weights", head=h, module=module, step=step) for h in range(heads)])


@pytest.fixture(scope="module")
def hf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("transformers")
    root = tmp_path_factory.mktemp("two")
    return {"llama": tiny(root, "llama", dict(SMALL, num_key_value_heads=2)),
            "qwen2": tiny(root, "qwen2", dict(SMALL, num_hidden_layers=3, num_key_value_heads=2)),
            "draft": tiny(root, "llama", dict(SMALL, num_hidden_layers=1, num_key_value_heads=4), name="draft")}


@pytest.mark.slow
@pytest.mark.models
def test_two_hf_models_with_the_same_paths_each_keep_every_layer(hf: dict[str, Path]) -> None:
    import transformers

    tokenizers = {name: transformers.AutoTokenizer.from_pretrained(hf[name]) for name in ("llama", "qwen2")}
    first, second = causal(hf["llama"]), causal(hf["qwen2"])
    other = "the dog ran"  # of another length: each layer's weights are its own model's
    with torch.no_grad(), attn_tui.record() as rec:
        first(**tokenizers["llama"](TEXT, return_tensors="pt", return_token_type_ids=False))
        second(**tokenizers["qwen2"](other, return_tensors="pt", return_token_type_ids=False))
    trace = rec.trace
    names = [f"model.layers.{i}.self_attn" for i in range(2)] + \
        [f"Qwen2ForCausalLM:model.layers.{i}.self_attn" for i in range(3)]
    assert trace.meta.modules == tuple(names)
    for module, expected in zip(names, reference(hf["llama"]) + reference(hf["qwen2"], other)):
        torch.testing.assert_close(layer_weights(trace, module, 4), expected, atol=1e-5, rtol=0)


@pytest.mark.slow
@pytest.mark.models
def test_assisted_generation_names_the_draft_and_leaves_the_samplers_softmax_out(hf: dict[str, Path]) -> None:
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(hf["llama"])
    target, draft = causal(hf["llama"]), causal(hf["draft"])
    prompt = tokenizer("the cat sat", return_tensors="pt", return_token_type_ids=False)
    with torch.no_grad(), attn_tui.record() as rec:
        target.generate(**prompt, assistant_model=draft, max_new_tokens=3, do_sample=False, pad_token_id=0)
    trace = rec.trace
    drafted = "LlamaForCausalLM#2:model.layers.0.self_attn"
    assert set(trace.meta.modules) == {drafted, "model.layers.0.self_attn", "model.layers.1.self_attn"}
    assert {s.place.module for s in trace} == set(trace.meta.modules)  # no class name, no sampler's softmax
    # the first call of each reads the prompt (the target's, the draft's candidates after it): its causal rows
    # over the prompt are the weights eager attention gives for the prompt alone
    n = prompt["input_ids"].shape[1]
    for module, expected in ((drafted, reference(hf["draft"], "the cat sat")[0]),
                             ("model.layers.0.self_attn", reference(hf["llama"], "the cat sat")[0])):
        torch.testing.assert_close(layer_weights(trace, module, 4, step=0)[:, :n, :n], expected, atol=1e-5, rtol=0)


@pytest.mark.slow
@pytest.mark.models
def test_sampled_generation_records_only_the_models_attention(hf: dict[str, Path]) -> None:
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(hf["llama"])
    model = causal(hf["llama"])
    prompt = tokenizer("the cat sat", return_tensors="pt", return_token_type_ids=False)
    torch.manual_seed(0)
    with torch.no_grad(), attn_tui.record() as rec:
        model.generate(**prompt, do_sample=True, top_k=20, top_p=0.9, temperature=0.7, repetition_penalty=1.3,
                       max_new_tokens=3, pad_token_id=0)
    trace = rec.trace
    assert trace.meta.modules == ("model.layers.0.self_attn", "model.layers.1.self_attn")
    assert trace.meta.calls == (3, 3) and not any("vocab" in str(w) for w in trace.warnings)
    assert {tuple(s.shape)[-1] for s in trace if s.name == "weights"} <= {5, 6, 7}  # keys, never 30522 tokens
    for i, expected in enumerate(reference(hf["llama"], "the cat sat")):
        torch.testing.assert_close(layer_weights(trace, f"model.layers.{i}.self_attn", 4, step=0), expected,
                                   atol=1e-5, rtol=0)
