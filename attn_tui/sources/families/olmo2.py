"""OLMo-2: separate q/k/v linears read from the layer's raw input (its norms come after attention and after
the MLP, not before), an RMSNorm over the whole q and the whole k projection (all heads' dimensions
together, before the split into heads), rotate-half RoPE and grouped key/value heads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from attn_tui.i18n import Msg
from attn_tui.sources.families.llama import kv_heads, rope_base, weights
from attn_tui.sources.families.spec import Family, LayerSpec, NormSpec, RotarySpec

if TYPE_CHECKING:

    from attn_tui.sources.model_run import ModelRun


def _norm(module: Any) -> NormSpec:  # the model's Olmo2RMSNorm over heads·d_h
    return NormSpec("rms", module.weight, float(module.variance_epsilon), scope="projection")


def layer(run_: ModelRun, index: int) -> LayerSpec:
    import torch

    model = run_.loaded.model
    block = model.layers[index]
    attn = block.self_attn
    x = run_.hidden_states[index]  # (N, d): no norm before attention
    n = x.shape[0]
    cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])  # (1, N, d_h) each
    head_dim = int(attn.head_dim)
    rotary = RotarySpec(rope_base(model.config), fraction=cos.shape[-1] / head_dim, cos=cos[0], sin=sin[0],
                        scaling=float(getattr(model.rotary_emb, "attention_scaling", 1.0)))
    return LayerSpec(x, Msg("the layer's input, not normed: OLMo-2 norms after attention"), weights(attn),
                     run_.loaded.heads, kv_heads(model.config), head_dim, float(attn.scaling), causal=True,
                     q_norm=_norm(attn.q_norm), k_norm=_norm(attn.k_norm), rotary=rotary)


FAMILY = Family("olmo2", causal=True, layer=layer, kv_heads=kv_heads, rope_base=rope_base)
