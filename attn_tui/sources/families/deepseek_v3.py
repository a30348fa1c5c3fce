"""DeepSeek-V3 and V2 (the same layer; V2 turns its pairs as complex numbers): multi-head latent attention, traced
through the `mla` variant's stages.

No LayerSpec describes this layer (its keys and values are rebuilt from a cached latent), so the family records
its own stages with `attention.variants.mla.record`, the function the variant uses, from the model's weights:
q_a_proj → q_a_layernorm → q_b_proj (or q_proj where q_lora_rank is None), kv_a_proj_with_mqa cut into the
latent's rows (W_dkv) and the shared rotary key's (W_kr), kv_a_layernorm, kv_b_proj cut into W_uk and W_uv per
head. The rotary part turns interleaved pairs (2i, 2i + 1) where `rope_interleave` is set (DeepSeek's own
layout; transformers writes the turned pairs out de-interleaved, an order the scores do not see), else Llama's
rotate-half. The MoE feed-forward is not attention: only its output, the next layer's input, is read.
"""

from __future__ import annotations

from typing import Any

import torch

from attn_tui.attention.attend import Tail
from attn_tui.attention.variants.mla import Latent, Turn, record
from attn_tui.attention.variants.rope import rotate
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.sources.families.llama import rope_base
from attn_tui.sources.families.spec import Family, LayerSpec
from attn_tui.sources.families.tracer import rotate_pairs
from attn_tui.sources.model_run import ModelRun
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.ops import Op, PartialRotary, Place
from attn_tui.trace.stage import Axis, Trace


def model_turn(cos: torch.Tensor, sin: torch.Tensor, base: float, scaling: float, inv_freq: str,
               interleaved: bool) -> Turn:
    """The model's own rotation of a rotary part: DeepSeek's interleaved pairs (2i, 2i + 1) or rotate-half's
    (i, i + d/2), by the model's cos and sin (N, d_rope; each half the same angles, its rope scaling in them) and,
    for the inspector, its own frequencies, the parameter `inv_freq`."""
    half = cos.shape[-1] // 2
    if interleaved:
        cos, sin = (t[:, :half].repeat_interleave(2, dim=-1) for t in (cos, sin))  # (N, d_rope): an angle per pair

    def turn(x: torch.Tensor, at: Place, source: Place) -> tuple[torch.Tensor, Op, str | Msg]:
        letter = "q" if at.name.startswith("query") else "k"
        d, rows = x.shape[-1], x.shape[0]
        if interleaved:
            formula = Msg("{letter}_rot[p] = {letter}_rope[p] turned pair by pair (2i, 2i+1) by the angle p·θ_i, "
                          "θ_i = {base}^(−2i/{d})   (DeepSeek's interleaved pairs)", letter=letter, base=f"{base:g}",
                          d=d)
            turned = rotate_pairs(x, cos[:rows], sin[:rows])
        else:
            formula = Msg("{letter}_rot[p] = {letter}_rope[p] turned pair by pair (i, i + {half}) by the angle p·θ_i, "
                          "θ_i = {base}^(−2i/{d})", letter=letter, half=d // 2, base=f"{base:g}", d=d)
            turned = rotate(x, cos[:rows], sin[:rows])
        return turned, PartialRotary(source, base, d, interleaved, scaling, inv_freq=inv_freq), formula

    return turn


def weights(attn: Any, kv_rank: int, heads: int, d_nope: int) -> dict[str, torch.Tensor]:
    """The layer's parameters under the `mla` variant's names (see attention.variants.mla.Latent)."""
    found: dict[str, torch.Tensor] = {}
    if attn.q_a_proj is not None:
        found.update(W_qa=attn.q_a_proj.weight, q_norm=attn.q_a_layernorm.weight, W_qb=attn.q_b_proj.weight)
        if attn.q_a_proj.bias is not None:
            found["b_qa"] = attn.q_a_proj.bias
    else:
        found["W_q"] = attn.q_proj.weight
    down = attn.kv_a_proj_with_mqa  # rows: the latent's kv_rank, then the shared rotary key's
    found.update(W_dkv=down.weight[:kv_rank], W_kr=down.weight[kv_rank:], kv_norm=attn.kv_a_layernorm.weight)
    if down.bias is not None:
        found.update(b_dkv=down.bias[:kv_rank], b_kr=down.bias[kv_rank:])
    up = attn.kv_b_proj.weight.view(heads, -1, kv_rank)  # (H, d_nope + d_v, r): each head's key rows, then value's
    found.update(W_uk=up[:, :d_nope].reshape(-1, kv_rank), W_uv=up[:, d_nope:].reshape(-1, kv_rank))
    return found


def record_layer(run_: ModelRun, trace: Trace, index: int) -> float:
    """Every stage of layer `index`'s heads, through the variant's own `record`; returns the layer's scale."""
    model = run_.loaded.model
    cfg = model.config
    attn = model.layers[index].self_attn
    x = model.layers[index].input_layernorm(run_.hidden_states[index][None])[0]  # (N, d): what the projections read
    n, heads = x.shape[0], run_.loaded.heads
    kv_rank, d_nope = int(cfg.kv_lora_rank), int(cfg.qk_nope_head_dim)
    prefix = f"blocks.{index}."
    for name, tensor in weights(attn, kv_rank, heads, d_nope).items():
        trace.params[prefix + name] = tensor.detach()
    x_name = prefix + "X"
    trace.inputs[x_name] = x
    base = rope_base(cfg)
    m = Latent(heads, d_nope, int(cfg.qk_rope_head_dim), int(cfg.v_head_dim), int(cfg.q_lora_rank or 0), kv_rank,
               float(attn.scaling), base, _eps(attn.q_a_layernorm), _eps(attn.kv_a_layernorm), prefix=prefix)
    angles = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])
    interleaved = bool(getattr(cfg, "rope_interleave", False))
    if isinstance(angles, tuple):  # DeepSeek-V3: cos and sin (1, N, d_rope) each, each half the same angles
        cos, sin = angles
    else:  # DeepSeek-V2: e^(i·p·θ_j) (1, N, d_rope/2), turning interleaved pairs as complex numbers
        cos, sin = (torch.cat([part, part], dim=-1) for part in (angles.real, angles.imag))
        interleaved = True
    scaling = float(getattr(model.rotary_emb, "attention_scaling", 1.0))
    trace.params[prefix + "inv_freq"] = model.rotary_emb.inv_freq.detach()  # (d_rope/2,) θ_i, YaRN's included
    turn = model_turn(cos[0], sin[0], base, scaling, prefix + "inv_freq", interleaved)
    tokens = Axis("query", run_.tokens)
    trace.layer_masks[index] = trace.mask
    trace.geometry[index] = LayerGeometry("causal", None, Positional("rotary", base, m.d_rope / m.d_qk, interleaved),
                                          m.scale)
    tail = Tail(tokens, Axis("key", run_.tokens), trace.mask, "-inf", 1.0, output_formula="O = A·V_h")
    record(trace, m, x, x_name, tail, turn, index, lazy=False)
    return m.scale


def _eps(norm: Any) -> float:
    return 1e-6 if norm is None else float(norm.variance_epsilon)


def layer(run_: ModelRun, index: int) -> LayerSpec:
    """No LayerSpec holds a latent layer: a generation step, which reads one, is refused in words."""
    raise ConfigError(Msg("--generate does not trace {model} yet: its cache holds a latent, not keys and values",
                          model=run_.loaded.name))


FAMILY = Family("deepseek_v3", causal=True, layer=layer, rope_base=rope_base, record=record_layer)
