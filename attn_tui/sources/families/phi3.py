"""Phi-3: one fused `qkv_proj` whose rows are all query heads, then the key heads, then the value heads
(grouped key/value heads), rotate-half RoPE on the fraction of each head its `partial_rotary_factor` names,
an RMSNorm input, and a sliding window on every layer where the config sets one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attn_tui.sources.families.llama import kv_heads, rope_base
from attn_tui.sources.families.spec import Family, FusedRows, LayerSpec, RotarySpec

if TYPE_CHECKING:
    import torch

    from attn_tui.sources.model_run import ModelRun


def split_qkv(fused: torch.Tensor, heads: int, kv: int, head_dim: int) -> dict[str, torch.Tensor]:
    """W_q, W_k, W_v: the fused (heads·d_h + 2·kv·d_h, …) rows cut as Phi3Attention slices its output."""
    q_rows, kv_rows = heads * head_dim, kv * head_dim
    return {"q": fused[:q_rows], "k": fused[q_rows:q_rows + kv_rows], "v": fused[q_rows + kv_rows:]}


def weights(attn: Any, config: Any) -> dict[str, torch.Tensor]:  # the model's Phi3Attention and Phi3Config
    lin = attn.qkv_proj
    found = {f"W_{part}": w for part, w in split_qkv(lin.weight, config.num_attention_heads, kv_heads(config),
                                                        attn.head_dim).items()}
    if lin.bias is not None:
        found.update({f"b_{part}": b for part, b in split_qkv(lin.bias, config.num_attention_heads,
                                                               kv_heads(config), attn.head_dim).items()})
    return found


def layer(run_: ModelRun, index: int) -> LayerSpec:
    import torch

    model = run_.loaded.model
    config = model.config
    block = model.layers[index]
    attn = block.self_attn
    x = block.input_layernorm(run_.hidden_states[index][None])[0]  # (N, d)
    n = x.shape[0]
    cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])  # (1, N, rotated) each
    head_dim = int(attn.head_dim)
    rotary = RotarySpec(rope_base(config), fraction=cos.shape[-1] / head_dim, cos=cos[0], sin=sin[0],
                        scaling=float(getattr(model.rotary_emb, "attention_scaling", 1.0)))
    window = getattr(config, "sliding_window", None)
    heads, kv = run_.loaded.heads, kv_heads(config)
    start = {"q": 0, "k": heads * head_dim, "v": (heads + kv) * head_dim}  # query heads, key heads, value heads
    fused = FusedRows("qkv_proj", lambda part, n: start[part] + n * head_dim)
    return LayerSpec(x, "RMSNorm(X)", weights(attn, config), heads, kv, head_dim, float(attn.scaling), causal=True,
                     window=None if window is None else int(window), rotary=rotary, fused=fused)


FAMILY = Family("phi3", causal=True, layer=layer, kv_heads=kv_heads, rope_base=rope_base)
