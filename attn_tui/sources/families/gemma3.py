"""Gemma 3 text decoders: per-head q/k RMSNorm scaled by (1 + w), layers that alternate a sliding window and
global attention, each kind of layer with its own rotary base.

Its config carries `attn_logit_softcapping`, but Gemma 3's attention does not apply it (transformers passes
no soft cap to it), so neither does its trace; Gemma 2's does (gemma2.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attn_tui.sources.families.llama import kv_heads, weights
from attn_tui.sources.families.spec import Family, LayerSpec, NormSpec, RotarySpec

if TYPE_CHECKING:

    from attn_tui.sources.model_run import ModelRun


def _norm(module: Any) -> NormSpec:  # the model's Gemma3RMSNorm
    return NormSpec("rms", module.weight, float(module.eps), offset=1.0)


def rope_base(config: object) -> float:
    """The global layers' base (the sliding layers' own is in each layer's geometry)."""
    parameters = getattr(config, "rope_parameters", {}) or {}
    return float(parameters.get("full_attention", {}).get("rope_theta", 10000.0))


def layer(run_: ModelRun, index: int) -> LayerSpec:
    import torch

    model = run_.loaded.model
    config = model.config
    block = model.layers[index]
    attn = block.self_attn
    kind = config.layer_types[index]  # sliding_attention | full_attention
    x = block.input_layernorm(run_.hidden_states[index][None])[0]  # (N, d)
    n = x.shape[0]
    cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None], kind)  # (1, N, d_h) each
    rotary = RotarySpec(float(config.rope_parameters[kind]["rope_theta"]), cos=cos[0], sin=sin[0],
                        scaling=float(getattr(model.rotary_emb, f"{kind}_attention_scaling", 1.0)))
    return LayerSpec(x, "RMSNorm(X)", weights(attn), run_.loaded.heads, kv_heads(config), int(attn.head_dim),
                     float(attn.scaling), causal=True, window=attn.sliding_window, q_norm=_norm(attn.q_norm),
                     k_norm=_norm(attn.k_norm), rotary=rotary)


FAMILY = Family("gemma3", causal=True, layer=layer, kv_heads=kv_heads, rope_base=rope_base,
                model_types=("gemma3_text",))
