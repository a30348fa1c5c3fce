"""GPT-NeoX (Pythia): one fused `query_key_value` linear with bias whose rows are laid out head by head, each
head's q, k and v side by side (view(…, heads, 3·d_h)); a LayerNorm input; rotate-half RoPE on the first
`rotary_pct` of each head's dimensions (the rest pass unturned); the scale 1/√d_h."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.i18n import Msg
from attn_tui.sources.families.llama import rope_base
from attn_tui.sources.families.spec import Family, FusedRows, LayerSpec, RotarySpec

if TYPE_CHECKING:
    import torch

    from attn_tui.sources.model_run import ModelRun


def split_qkv(fused: torch.Tensor, heads: int) -> dict[str, torch.Tensor]:
    """W_q, W_k, W_v (heads·d_h, …): the fused rows are [q_0 k_0 v_0 q_1 k_1 v_1 …], d_h rows each."""
    per_head = fused.view(heads, 3, fused.shape[0] // (3 * heads), *fused.shape[1:])  # (H, 3, d_h, …)
    return {part: per_head[:, n].reshape(-1, *fused.shape[1:]) for n, part in enumerate("qkv")}


def layer(run_: ModelRun, index: int) -> LayerSpec:
    import torch

    model = run_.loaded.model
    block = model.layers[index]
    attn = block.attention
    heads = run_.loaded.heads
    lin = attn.query_key_value
    found = {f"W_{part}": w for part, w in split_qkv(lin.weight, heads).items()}
    if lin.bias is not None:
        found.update({f"b_{part}": b for part, b in split_qkv(lin.bias, heads).items()})
    x = block.input_layernorm(run_.hidden_states[index])  # (N, d)
    n = x.shape[0]
    cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])  # (1, N, rotated) each
    head_dim = int(attn.head_size)
    rotary = RotarySpec(rope_base(model.config), fraction=cos.shape[-1] / head_dim, cos=cos[0], sin=sin[0],
                        scaling=float(getattr(model.rotary_emb, "attention_scaling", 1.0)))
    fused = FusedRows("query_key_value", lambda part, h: (3 * h + "qkv".index(part)) * head_dim)  # [q_h k_h v_h]
    return LayerSpec(x, Msg("the layer's input after its LayerNorm"), found, heads, heads, head_dim,
                     float(attn.scaling), causal=True, rotary=rotary, fused=fused)


FAMILY = Family("gpt_neox", causal=True, layer=layer, rope_base=rope_base, output="attention.dense",
                unembedding="embed_out.weight", mlp_matrices=2)
