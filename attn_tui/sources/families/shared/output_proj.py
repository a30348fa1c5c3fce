"""Each layer's attention output projection W_O, under the name its family declares (`Family.output`).

What the `moved` stage reads (Kobayashi et al. 2020, "Attention is not only a weight"): head h's
slice of W_O maps its value vectors into the residual stream. Llama-style decoders call it
`self_attn.o_proj`, GPT-2 `attn.c_proj` (a Conv1D, stored transposed), BERT `attention.output.dense`.
"""

from __future__ import annotations

from typing import Any

import torch


def output_weight(model: Any, blocks: str | None, layer: int, width: int, name: str) -> torch.Tensor | None:
    """W_O of layer `layer` as nn.Linear holds it, (d, heads·d_h), found at `name` in the layer's block; None where
    the block has no such module (or its shape is not a projection into the model's width `width`)."""
    if blocks is None:
        return None
    try:
        module = model.get_submodule(f"{blocks}.{layer}.{name}")
    except AttributeError:
        return None
    weight = getattr(module, "weight", None)
    if not isinstance(weight, torch.Tensor) or weight.dim() != 2:
        return None
    if type(module).__name__ == "Conv1D":  # GPT-2 stores (in, out): y = x·W + b
        weight = weight.T
    return weight.detach() if weight.shape[0] == width else None
