"""StarCoder2: LayerNorm (with a bias) on the layer's input, biased q/k/v (`use_bias`), rotate-half RoPE, grouped
key/value heads, and one sliding window (`config.sliding_window`) on every layer, as Mistral's."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.sources.families import llama, mistral
from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def layer(run_: ModelRun, index: int) -> LayerSpec:
    # llama.layer runs the block's own input_layernorm (an nn.LayerNorm here) and keeps the biases q_proj has
    return replace(mistral.layer(run_, index), source="LayerNorm(X)")


FAMILY = Family("starcoder2", causal=True, layer=layer, kv_heads=llama.kv_heads, rope_base=llama.rope_base,
                mlp_matrices=2)
