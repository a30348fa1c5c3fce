"""Each layer's attention output projection W_O, found by the names the families give it.

What the `moved` stage reads (Kobayashi et al. 2020, "Attention is not only a weight"): head h's
slice of W_O maps its value vectors into the residual stream. One lookup for every family, so an
adapter says nothing new: Llama-style decoders call it `self_attn.o_proj`, GPT-2 `attn.c_proj`
(a Conv1D, stored transposed), BERT `attention.output.dense`, GPT-NeoX `attention.dense`.
"""

from __future__ import annotations

from typing import Any

import torch

OUTPUT_NAMES = ("self_attn.o_proj", "attn.c_proj", "attention.output.dense", "attention.dense", "attn.o_proj",
                "self_attn.out_proj", "attention.o_proj")


def output_weight(model: Any, blocks: str | None, layer: int, width: int) -> torch.Tensor | None:
    """W_O of layer `layer` as nn.Linear holds it, (d, heads·d_h); None where the block has none of these names
    (or its shape is not a projection into the model's width `width`)."""
    if blocks is None:
        return None
    try:
        block = model.get_submodule(f"{blocks}.{layer}")
    except AttributeError:
        return None
    for name in OUTPUT_NAMES:
        try:
            module = block.get_submodule(name)
        except AttributeError:
            continue
        weight = getattr(module, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
            continue
        if type(module).__name__ == "Conv1D":  # GPT-2 stores (in, out): y = x·W + b
            weight = weight.T
        return weight.detach() if weight.shape[0] == width else None
    return None
