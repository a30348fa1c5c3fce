"""Llama-style decoders (Llama, SmolLM2, Qwen2, Mistral): RMSNorm input, separate q/k/v linears (biased in
Qwen2), rotate-half RoPE with the model's own cos and sin, grouped key/value heads, causal, a window where the
layer slides."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attn_tui.sources.families.spec import Family, LayerSpec, RotarySpec

if TYPE_CHECKING:
    import torch

    from attn_tui.sources.model_run import ModelRun


def rope_base(config: object) -> float:
    """θ's base: `rope_parameters["rope_theta"]` in transformers 5, `rope_theta` before."""
    parameters = getattr(config, "rope_parameters", None)
    if isinstance(parameters, dict) and "rope_theta" in parameters:
        return float(parameters["rope_theta"])
    return float(getattr(config, "rope_theta", 10000.0))


def kv_heads(config: Any) -> int:  # a transformers PretrainedConfig
    """Key/value heads; a config without `num_key_value_heads` gives each query head its own."""
    return int(getattr(config, "num_key_value_heads", None) or config.num_attention_heads)


def weights(attn: object) -> dict[str, torch.Tensor]:
    """W_q, W_k, W_v and the biases a model has, from its q_proj, k_proj, v_proj."""
    found = {}
    for part in "qkv":
        lin = getattr(attn, f"{part}_proj")
        found[f"W_{part}"] = lin.weight
        if lin.bias is not None:
            found[f"b_{part}"] = lin.bias
    return found


def layer(run_: ModelRun, index: int) -> LayerSpec:
    import torch

    model = run_.loaded.model
    block = model.layers[index]
    attn = block.self_attn
    x = block.input_layernorm(run_.hidden_states[index][None])[0]  # (N, d): what the projections read
    n = x.shape[0]
    cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])  # (1, N, d_h) each
    rotary = RotarySpec(rope_base(model.config), cos=cos[0], sin=sin[0],
                        scaling=float(getattr(model.rotary_emb, "attention_scaling", 1.0)))
    heads = run_.loaded.heads
    return LayerSpec(x, "RMSNorm(X)", weights(attn), heads, kv_heads(model.config),
                     int(getattr(attn, "head_dim", x.shape[1] // heads)), float(attn.scaling), causal=True,
                     window=getattr(attn, "sliding_window", None), rotary=rotary)


FAMILY = Family("llama", causal=True, layer=layer, kv_heads=kv_heads, rope_base=rope_base,
                model_types=("llama", "qwen2"))
