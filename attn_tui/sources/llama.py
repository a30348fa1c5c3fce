"""Llama-family decoders (SmolLM2) traced head by head: projections, RoPE, the shared key/value head, the tail.

The stages are those of the `rope` and `gqa` variants, recorded by the same functions, on
the model's own tensors: each layer's input after its RMSNorm, its q/k/v projections, its
rotary cos and sin, its scaling and causal mask. The tests check that the weights equal the
model's own `output_attentions` for every layer and head.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from attn_tui.attention.attend import Tail, score_family
from attn_tui.attention.variants.gqa import kv_map, shared_formula
from attn_tui.attention.variants.rope import record_rotation, rotated_score_stages
from attn_tui.attention.variants.scaled_dot import scaled_pre
from attn_tui.i18n import Msg
from attn_tui.sources.hf import ModelRun, layered_trace
from attn_tui.trace.meta import TransformerRun
from attn_tui.trace.ops import Linear, Place
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis


def rope_base(config: object) -> float:
    """θ's base: `rope_parameters["rope_theta"]` in transformers 5, `rope_theta` before."""
    parameters = getattr(config, "rope_parameters", None)
    if isinstance(parameters, dict) and "rope_theta" in parameters:
        return float(parameters["rope_theta"])
    return float(getattr(config, "rope_theta", 10000.0))


def trace_run(run_: ModelRun, layer: int, head: int) -> Trace:
    """The run as one Trace; `layer` is computed now (every head of it), the others when asked for."""
    loaded = run_.loaded
    cfg = loaded.model.config
    kv_heads = int(cfg.num_key_value_heads)
    meta = TransformerRun(loaded.name, loaded.family, loaded.layers, loaded.heads, 0.0, True, run_.special,
                          kv_heads, kv_map(loaded.heads, kv_heads), rope_base(cfg))
    return layered_trace(run_, meta, layer, head, _fill)


def _fill(run_: ModelRun, trace: Trace, layer: int | None) -> None:
    """Every head of `layer`: its q, its group's k and v, both rotated, scores and scale, then the shared tail."""
    loaded = run_.loaded
    if layer is None or not 0 <= layer < loaded.layers:
        return
    model = loaded.model
    assert isinstance(trace.meta, TransformerRun)
    heads, kv_heads, base = loaded.heads, trace.meta.kv_heads, trace.meta.rope_base
    block = model.layers[layer]
    attn = block.self_attn
    with torch.no_grad():
        x = block.input_layernorm(run_.hidden_states[layer][None])[0]  # (N, d): what the projections read
        n = x.shape[0]
        d_h = int(getattr(attn, "head_dim", x.shape[1] // heads))
        prefix = f"blocks.{layer}."
        trace.inputs[prefix + "X"] = x
        projected = {}
        for part, lin, count in (("q", attn.q_proj, heads), ("k", attn.k_proj, kv_heads), ("v", attn.v_proj, kv_heads)):
            trace.params[prefix + f"W_{part}"] = lin.weight.detach()
            if lin.bias is not None:
                trace.params[prefix + f"b_{part}"] = lin.bias.detach()
            projected[part] = lin(x).view(n, count, d_h).transpose(0, 1)  # (count, N, d_h)
        cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])  # (1, N, d_h) each
        scaling = float(getattr(model.rotary_emb, "attention_scaling", 1.0))
        groups = kv_map(heads, kv_heads)
        tokens, keys = Axis("query", run_.tokens), Axis("key", run_.tokens)
        dims = dim_axis(d_h)
        q_rot, k_rot = [], []
        for h in range(heads):
            g = groups[h]
            span = f"{g * d_h}…{(g + 1) * d_h - 1}"
            for name, part, index, axis in (("query", "q", h, tokens), ("key", "k", g, keys), ("value", "v", g, keys)):
                bias = prefix + f"b_{part}" if prefix + f"b_{part}" in trace.params else None
                formula = (Msg("Q_{h} = RMSNorm(X)·W_qᵀ, columns of head {h}   (before the rotation)", h=h)
                           if part == "q" else shared_formula(part.upper(), h, g, groups, span))
                trace.add(Stage(Place(name, layer, h), projected[part][index], formula, (axis, dims),
                                Linear(prefix + "X", prefix + f"W_{part}", bias, index * d_h)))
            q_rot.append(record_rotation(trace, Place("query_rot", layer, h), Place("query", layer, h),
                                         projected["q"][h], cos[0], sin[0], (tokens, dims), base, scaling))
            k_rot.append(record_rotation(trace, Place("key_rot", layer, h), Place("key", layer, h),
                                         projected["k"][g], cos[0], sin[0], (keys, dims), base, scaling))
        stages, factor = rotated_score_stages((tokens, keys), d_h, float(attn.scaling))
        tail = Tail(tokens, keys, trace.mask, "-inf", 1.0, output_formula="O = A·V_h")
        values = projected["v"][torch.tensor(groups, device=x.device)]  # (H, N, d_h): each head's group's
        score_family(trace, tail, scaled_pre(torch.stack(q_rot), torch.stack(k_rot), factor), stages, "scaled",
                     values, [Place("scores", layer, h) for h in range(heads)],
                     [Place("value", layer, h) for h in range(heads)], lazy=False)
        trace.meta = replace(trace.meta, scale=float(attn.scaling))
