"""DeepSeek-V3 and V2 (the same layer; V2 turns its pairs as complex numbers): multi-head latent attention, traced
through the `mla` variant's stages.

No LayerSpec describes this layer (its keys and values are rebuilt from a cached latent), so the family records
its own stages with `attention.variants.mla.compute.record`, the function the variant uses, from the model's weights:
q_a_proj → q_a_layernorm → q_b_proj (or q_proj where q_lora_rank is None), kv_a_proj_with_mqa cut into the
latent's rows (W_dkv) and the shared rotary key's (W_kr), kv_a_layernorm, kv_b_proj cut into W_uk and W_uv per
head. The rotary part turns interleaved pairs (2i, 2i + 1) where `rope_interleave` is set (DeepSeek's own
layout; transformers writes the turned pairs out de-interleaved, an order the scores do not see), else Llama's
rotate-half. The MoE feed-forward is not attention: only its output, the next layer's input, is read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, Msg
from attn_tui.sources.families.llama import rope_base
from attn_tui.sources.families.shared.parts import latent_projection
from attn_tui.sources.families.spec import ConfigCheck, Family, LatentFamily, LayerSpec, whole
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.ops import Op, PartialRotary, Place

if TYPE_CHECKING:
    import torch

    from attn_tui.attention.variants.mla.compute import Latent, Turn
    from attn_tui.sources.model_run import ModelRun
    from attn_tui.trace.stage import Trace


def model_turn(cos: torch.Tensor, sin: torch.Tensor, base: float, scaling: float, inv_freq: str,
               interleaved: bool, start: int = 0) -> Turn:
    """The model's own rotation of a rotary part: DeepSeek's interleaved pairs (2i, 2i + 1) or rotate-half's
    (i, i + d/2), by the model's cos and sin (N, d_rope; each half the same angles, its rope scaling in them) and,
    for the inspector, its own frequencies, the parameter `inv_freq`; `start`: the position of cos's row 0."""
    from attn_tui.attention.variants.rope.compute import rotate
    from attn_tui.sources.families.shared.tracer import rotate_pairs

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
        return turned, PartialRotary(source, base, d, interleaved, scaling, start, inv_freq=inv_freq), formula

    return turn


def weights(attn: Any, kv_rank: int, heads: int, d_nope: int) -> dict[str, torch.Tensor]:
    """The layer's parameters under the `mla` variant's names (see attention.variants.mla.compute.Latent)."""

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


def latent_sizes(attn: Any, cfg: Any, heads: int, prefix: str) -> Latent:
    """The layer's sizes, scale and norms' epsilons, as the `mla` variant reads them."""
    from attn_tui.attention.variants.mla.compute import Latent

    return Latent(heads, int(cfg.qk_nope_head_dim), int(cfg.qk_rope_head_dim), int(cfg.v_head_dim),
                  int(cfg.q_lora_rank or 0), int(cfg.kv_lora_rank), float(attn.scaling), rope_base(cfg),
                  _eps(attn.q_a_layernorm), _eps(attn.kv_a_layernorm), prefix=prefix)


def turn_at(model: Any, x: torch.Tensor, first: int, prefix: str) -> Turn:
    """The model's own rotation of rows at positions first… (x (rows, d): what sets the angles' dtype)."""
    import torch

    cfg = model.config
    angles = model.rotary_emb(x[None], torch.arange(first, first + x.shape[0], device=x.device)[None])
    interleaved = bool(getattr(cfg, "rope_interleave", False))
    if isinstance(angles, tuple):  # DeepSeek-V3: cos and sin (1, N, d_rope) each, each half the same angles
        cos, sin = angles
    else:  # DeepSeek-V2: e^(i·p·θ_j) (1, N, d_rope/2), turning interleaved pairs as complex numbers
        cos, sin = (torch.cat([part, part], dim=-1) for part in (angles.real, angles.imag))
        interleaved = True
    scaling = float(getattr(model.rotary_emb, "attention_scaling", 1.0))
    return model_turn(cos[0], sin[0], rope_base(cfg), scaling, prefix + "inv_freq", interleaved, first)


def record_layer(run_: ModelRun, trace: Trace, index: int, step: int | None = None, queries: int | None = None
                 ) -> float:
    """Every stage of layer `index`'s heads, through the variant's own `record`; returns the layer's scale.

    `step` places the stages at a generation step; `queries`: only the last `queries` rows query."""
    from attn_tui.attention.attend import Tail
    from attn_tui.attention.variants.mla.compute import record
    from attn_tui.trace.masks import MaskSpec
    from attn_tui.trace.stage import Axis

    model = run_.loaded.model
    cfg = model.config
    attn = model.layers[index].self_attn
    x = model.layers[index].input_layernorm(run_.hidden_states[index][None])[0]  # (N, d): what the projections read
    n, heads = x.shape[0], run_.loaded.heads
    first = 0 if queries is None else n - queries
    kv_rank, d_nope = int(cfg.kv_lora_rank), int(cfg.qk_nope_head_dim)
    prefix = f"blocks.{index}."
    for name, tensor in weights(attn, kv_rank, heads, d_nope).items():
        trace.params[prefix + name] = tensor.detach()
    x_name = prefix + "X" + ("" if step is None else f"@t{step}")
    trace.inputs[x_name] = x
    m = latent_sizes(attn, cfg, heads, prefix)
    trace.params[prefix + "inv_freq"] = model.rotary_emb.inv_freq.detach()  # (d_rope/2,) θ_i, YaRN's included
    turn = turn_at(model, x, 0, prefix)
    rows: tuple[int, str, Turn] | None = None
    if first:
        q_name = prefix + f"x_q@t{step}"
        trace.inputs[q_name] = x[first:]
        rows = (first, q_name, turn_at(model, x[first:], first, prefix))
    tokens = Axis("query", run_.tokens[first:])
    mask = trace.mask if step is None else MaskSpec((n, n), True)
    trace.layer_masks[index] = mask
    trace.geometry[index] = LayerGeometry("causal", None, Positional("rotary", m.base, m.d_rope / m.d_qk,
                                                                     bool(getattr(cfg, "rope_interleave", False))),
                                          m.scale)
    if mask is not None and first:
        mask = mask.part(slice(first, n), slice(None))  # the query rows' part of the causal mask
    tail = Tail(tokens, Axis("key", run_.tokens), mask, "-inf", 1.0, output_formula="O = A·V_h")
    record(trace, m, x, x_name, tail, turn, index, lazy=False, step=step, query_rows=rows)
    return m.scale


def _eps(norm: Any) -> float:
    return 1e-6 if norm is None else float(norm.variance_epsilon)


def layer(run_: ModelRun, index: int) -> LayerSpec:
    """No LayerSpec holds a latent layer (the family records its own, and writes through `latent_step`)."""
    raise ConfigError(Msg("{model}'s layers hold a latent, not keys and values: no key/value layer to read",
                          model=run_.loaded.name))


def latent_parameters(size: Callable[[str], int | None]) -> int | None:
    """One layer's attention parameters, from config.json's sizes: q_a, its norm and q_b (or one q_proj), the
    down-projection to the latent and the rotary key, its norm, the up-projection to every head's key and value,
    and o_proj. None for a config without the latent's sizes (q, k, v and o are counted as usual)."""
    nope = size("qk_nope_head_dim")
    if nope is None:
        return None
    width, heads = size("hidden_size") or 0, size("num_attention_heads") or 0
    rope = size("head_dim")
    rope = rope if rope is not None else width // max(heads, 1)
    q_rank, kv_rank, v_dim = (size(name) or 0 for name in ("q_lora_rank", "kv_lora_rank", "v_head_dim"))
    query = q_rank * (width + 1 + heads * (nope + rope)) if q_rank else width * heads * (nope + rope)
    return query + width * (kv_rank + rope) + kv_rank + kv_rank * heads * (nope + v_dim) + heads * v_dim * width


def expert_parameters(size: Callable[[str], int | None], layer: int) -> int | None:
    """Layer `layer`'s MLP where it is a mixture of experts: from `first_k_dense_replace` on (and, in V2, every
    `moe_layer_freq`-th), its routed experts and shared ones of `moe_intermediate_size` each, and the router; None
    for a dense layer, or a config without experts."""
    experts, inner = size("n_routed_experts"), size("moe_intermediate_size")
    dense = layer < (size("first_k_dense_replace") or 0) or layer % (size("moe_layer_freq") or 1)
    if not experts or not inner or dense:
        return None
    width = size("hidden_size") or 0
    return 3 * width * inner * (experts + (size("n_shared_experts") or 0)) + experts * (width + 1)


FAMILY = Family("deepseek_v3", causal=True, layer=layer, rope_base=rope_base,
                own_layers=latent_projection(LatentFamily(latent_sizes, weights, turn_at, record_layer)),
                model_types=("deepseek_v3", "deepseek_v2"), sizes={"qk_nope": "qk_nope_head_dim"},
                attention_parameters=latent_parameters,
                expert_parameters=expert_parameters,
                checks=tuple(ConfigCheck((key,), whole, N_("a whole number, at least 1")) for key in
                             ("kv_lora_rank", "q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")))
