"""Qwen3: a Llama layer with an RMSNorm (weight w, no offset) over each head's q and k before the rotation,
and a sliding window on the layers `config.layer_types` marks (where `use_sliding_window` is on)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from attn_tui.sources.families import llama
from attn_tui.sources.families.spec import Family, LayerSpec, NormSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def _norm(module: Any) -> NormSpec:  # the model's Qwen3RMSNorm over head_dim
    return NormSpec("rms", module.weight, float(module.variance_epsilon))


def layer(run_: ModelRun, index: int) -> LayerSpec:
    # llama.layer reads the layer's own window (Qwen3Attention.sliding_window: None on its full-attention layers)
    attn = run_.loaded.model.layers[index].self_attn
    return replace(llama.layer(run_, index), q_norm=_norm(attn.q_norm), k_norm=_norm(attn.k_norm))


FAMILY = Family("qwen3", causal=True, layer=layer, kv_heads=llama.kv_heads, rope_base=llama.rope_base)
