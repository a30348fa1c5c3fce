"""Tiny random-weight models of any family, built offline with transformers and saved as a folder with a real
tokenizer beside it: what every family test (and the app's and compare's tests of a family) opens."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import torch

TEXT = "the cat sat on the mat and looked at the door"
VOCAB = 30522  # the shipped MiniLM tokenizer's, copied beside each tiny model
ALTERNATE = ["sliding_attention", "full_attention"] * 2  # layers 0 and 2 slide, 1 and 3 see every earlier key
SMALL: dict[str, Any] = dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                             num_attention_heads=4, max_position_embeddings=64)
ENCODERS = {"bert", "roberta", "xlm-roberta"}  # opened with AutoModel; the others with AutoModelForCausalLM


def tokenizer_files(into: Path) -> None:
    """The shipped MiniLM tokenizer's files, copied into a model folder; the test is skipped, saying why, where
    the MiniLM package is not installed (a machine with transformers but not `attn-tui[models]`)."""
    import pytest

    from attn_tui.sources import folder

    try:
        shipped = Path(folder.resolve("minilm"))
    except folder.ModelError as error:
        pytest.skip(str(error))
    for name in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (shipped / name).is_file():
            shutil.copy(shipped / name, into / name)


def tiny(tmp_path: Path, model_type: str, config: dict[str, Any], name: str | None = None) -> Path:
    """A tiny random model of `model_type`, saved as safetensors with a real tokenizer beside it.

    Weights are drawn wide (std 0.5, 1-D weights such as the q/k norms' too) so that every stage matters:
    a soft cap bends the scores, a norm's weight is not all ones.
    """
    import transformers

    made = transformers.AutoConfig.for_model(model_type, **config)
    torch.manual_seed(0)
    auto = transformers.AutoModel if model_type in ENCODERS else transformers.AutoModelForCausalLM
    model = auto.from_config(made, attn_implementation="eager")
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.normal_(0.0, 0.5 if parameter.dim() > 1 else 0.3)
    path = tmp_path / (name or model_type)
    model.save_pretrained(path)
    tokenizer_files(path)
    return path


def reference(path: Path, text: str = TEXT) -> tuple[torch.Tensor, ...]:
    """transformers' own eager attention weights over `text`: one (heads, N, N) per layer."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    with torch.no_grad():
        out = model(**tokenizer(text, return_tensors="pt"), output_attentions=True)
    return tuple(a[0] for a in out.attentions)
