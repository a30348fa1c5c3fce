"""The matrix a causal model's last hidden state is read through to make its logits: what the sampler needs."""

from __future__ import annotations

from pathlib import Path

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.families import family_named
from attn_tui.sources.folder import ModelError
from attn_tui.sources.model_run import LoadedModel


def output_embedding(loaded: LoadedModel, folder: Path | None) -> torch.Tensor:
    """(V, d) the matrix that turns the last hidden state into logits: the input embedding where the model ties
    them, else the folder's own, under the name its family gives it (`lm_head.weight`; GPT-NeoX's
    `embed_out.weight`), read alone from its safetensors, not a second model."""
    model = loaded.model
    config = model.config
    embedding: torch.Tensor = model.get_input_embeddings().weight.detach()  # (V, d)
    if getattr(config, "tie_word_embeddings", False) or folder is None:
        return embedding
    from safetensors import safe_open

    name = family_named(loaded.family).unembedding

    for file in sorted(folder.glob("*.safetensors")):
        with safe_open(str(file), framework="pt") as weights:
            if name in set(weights.keys()):
                found: torch.Tensor = weights.get_tensor(name)
                return found.to(embedding.device, embedding.dtype)
    raise ModelError(Msg("{model} holds no {name} and does not tie it to its input embedding: it cannot write",
                         model=loaded.name, name=name))
