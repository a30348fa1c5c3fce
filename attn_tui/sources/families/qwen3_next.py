"""Qwen3-Next: Gated DeltaNet linear-attention layers between gated full-attention layers (`config.layer_types`).

A full-attention layer is Qwen3's (a per-head q/k RMSNorm, here scaled by (1 + w), and a partial rotation) whose
q_proj is twice as wide: each head's rows hold its query, then its output gate, and σ of the gate multiplies the
head's output before o_proj (stages `gate` and `gated`). A linear layer keeps no keys: its q, k and v pass a
short causal convolution and SiLU, then each value head runs the `linear` variant's gated delta rule (the same
functions record decay, beta, the state per token, the implied matrix and the output), and a gated RMSNorm
opens each head's output by SiLU(z) before out_proj (stage `gated_norm`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attn_tui.ask.budget import format_bytes
from attn_tui.attention.variants.linear import Decay, WriteStrength
from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, Msg
from attn_tui.sources.families.llama import kv_heads, rope_base
from attn_tui.sources.families.shared.parts import per_layer_state
from attn_tui.sources.families.spec import (
    AfterHeads,
    ConfigCheck,
    Divides,
    Family,
    LayerSpec,
    NormSpec,
    RotarySpec,
    whole,
)
from attn_tui.trace.ops import CausalConv, GatedNorm, GateProduct, Given, Op, Place, SigmoidGate

if TYPE_CHECKING:
    import torch

    from attn_tui.sources.model_run import ModelRun
    from attn_tui.trace.stage import Trace

STATES_BYTES = 1 << 29  # a linear layer's states are stepped through one by one; more is only memory


def _norm(module: Any) -> NormSpec:  # the model's Qwen3NextRMSNorm: x / rms · (1 + w)
    return NormSpec("rms", module.weight, float(module.eps), offset=1.0)


def _halves(weight: torch.Tensor, heads: int, d_h: int) -> tuple[torch.Tensor, torch.Tensor]:
    """q_proj's rows (or bias) cut into the queries' and the gates': head h owns rows 2h·d_h … 2(h+1)·d_h − 1, its
    query first, then its gate (the model's `view(…, -1, 2·head_dim)` then `chunk(2)`)."""
    pairs = weight.reshape(heads, 2, d_h, *weight.shape[1:])
    return pairs[:, 0].reshape(heads * d_h, *weight.shape[1:]), pairs[:, 1].reshape(heads * d_h, *weight.shape[1:])


def layer(run_: ModelRun, index: int) -> LayerSpec:
    """A full-attention layer as the shared tracer reads it (its gate is recorded after, by `fill`)."""
    import torch

    model = run_.loaded.model
    block = model.layers[index]
    attn = getattr(block, "self_attn", None)
    if attn is None:
        raise ConfigError(Msg("layer {layer} of {model} is a linear-attention layer: it keeps a state, not keys "
                              "and values", layer=index, model=run_.loaded.name))
    x = block.input_layernorm(run_.hidden_states[index][None])[0]  # (N, d)
    n, heads, d_h = x.shape[0], run_.loaded.heads, int(attn.head_dim)
    cos, sin = model.rotary_emb(x[None], torch.arange(n, device=x.device)[None])  # (1, N, rotated) each
    rotary = RotarySpec(rope_base(model.config), fraction=cos.shape[-1] / d_h, cos=cos[0], sin=sin[0],
                        scaling=float(getattr(model.rotary_emb, "attention_scaling", 1.0)))
    weights = {"W_q": _halves(attn.q_proj.weight, heads, d_h)[0], "W_k": attn.k_proj.weight,
               "W_v": attn.v_proj.weight}
    if attn.q_proj.bias is not None:
        weights |= {"b_q": _halves(attn.q_proj.bias, heads, d_h)[0], "b_k": attn.k_proj.bias,
                    "b_v": attn.v_proj.bias}
    return LayerSpec(x, "RMSNorm(X)", weights, heads, kv_heads(model.config), d_h, float(attn.scaling), causal=True,
                     q_norm=_norm(attn.q_norm), k_norm=_norm(attn.k_norm), rotary=rotary)


def is_linear(model: Any, index: int) -> bool:
    """Layer `index` is a Gated DeltaNet layer (it has no self_attn): it keeps a state, not keys and values."""
    return getattr(model.layers[index], "self_attn", None) is None


def output_gate(trace: Trace, spec: LayerSpec, index: int, run_: ModelRun, step: int | None, queries: int | None
                ) -> None:
    """A full-attention layer's gate, after the shared tracer's heads (at a written step too)."""
    _gate(run_, trace, index, spec, run_.loaded.model.layers[index].self_attn, step, queries)


def linear_layer(run_: ModelRun, trace: Trace, index: int) -> None:
    """A Gated DeltaNet layer's stages (its steps, when the model writes, are `per_layer_state`'s)."""
    _linear(run_, trace, index, run_.loaded.model.layers[index])


def _gate(run_: ModelRun, trace: Trace, index: int, spec: LayerSpec, attn: Any, step: int | None = None,
          queries: int | None = None) -> None:
    """gate = σ(X·W_gᵀ + b_g) per head, and gated = output ⊙ gate: what o_proj reads.

    `step` places them at a generation step, where only the last `queries` rows query (record_layer's names)."""
    import torch

    from attn_tui.trace.stage import Axis, Stage, dim_axis

    prefix = f"blocks.{index}."
    heads, d_h = spec.heads, spec.head_dim
    first = 0 if queries is None else spec.x.shape[0] - queries
    x = spec.x[first:]  # (L, d): the rows that query
    source = prefix + "X" + ("" if step is None else f"@t{step}") if not first else prefix + f"x_q@t{step}"
    w_g = _halves(attn.q_proj.weight, heads, d_h)[1]  # (H·d_h, d)
    trace.params[prefix + "W_g"] = w_g.detach()
    gate = torch.sigmoid(torch.nn.functional.linear(x, w_g))  # (L, H·d_h)
    if attn.q_proj.bias is not None:
        b_g = _halves(attn.q_proj.bias, heads, d_h)[1]
        trace.params[prefix + "b_g"] = b_g.detach()
        gate = torch.sigmoid(torch.nn.functional.linear(x, w_g, b_g))
    tokens, dims = Axis("query", run_.tokens[first:]), dim_axis(d_h)
    for h in range(heads):
        at = Place("gate", index, h, step)
        trace.add(Stage(at, gate[:, h * d_h:(h + 1) * d_h],
                        Msg("G_h = σ(X·W_gᵀ), columns of head {h}: the gate half of the model's q_proj rows", h=h),
                        (tokens, dims), SigmoidGate(source, prefix + "W_g", h * d_h,
                                                    prefix + "b_g" if attn.q_proj.bias is not None else None)))
        output = trace.stages[at.at("output")].tensor
        trace.add(Stage(at.at("gated"), output * gate[:, h * d_h:(h + 1) * d_h],
                        Msg("O_g = O ⊙ G: the head's output times its gate, what o_proj reads"), (tokens, dims),
                        GateProduct(at.at("output"), at)))


def _linear(run_: ModelRun, trace: Trace, index: int, block: Any) -> None:
    """The Gated DeltaNet layer, from the module's own projections and convolution, one value head at a time."""
    import torch
    from transformers.activations import ACT2FN

    from attn_tui.attention.variants.linear.compute import record_gates, record_normed, record_state, token_steps
    from attn_tui.trace.stage import Axis, Stage, dim_axis

    la = block.linear_attn
    prefix = f"blocks.{index}."
    x = block.input_layernorm(run_.hidden_states[index][None])  # (1, N, d)
    n = x.shape[1]
    query, key, value, z, b, a = la.fix_query_key_value_ordering(la.in_proj_qkvz(x), la.in_proj_ba(x))
    before = torch.cat([t.reshape(1, n, -1) for t in (query, key, value)], dim=-1).transpose(1, 2)  # (1, C, N)
    mixed = ACT2FN[la.activation](la.conv1d(before)[..., :n]).transpose(1, 2)[0]  # (N, C): causal conv, then SiLU
    trace.inputs[prefix + "qkv"] = before[0].T  # (N, C): q, k and v of every head before the convolution
    trace.params[prefix + "conv"] = la.conv1d.weight[:, 0].detach()  # (C, K)
    k_heads, v_heads, d_k, d_v = la.num_k_heads, la.num_v_heads, la.head_k_dim, la.head_v_dim
    held = 4 * v_heads * n * d_k * d_v  # bytes: a float32 state per token per value head
    if held > STATES_BYTES:
        raise ConfigError(Msg("layer {layer}'s states would hold {size} (a {d_k} × {d_v} state per token for each of "
                              "{heads} heads): shorten the text to {most} tokens or fewer", layer=index,
                              size=format_bytes(held), d_k=d_k, d_v=d_v, heads=v_heads,
                              most=STATES_BYTES // (4 * v_heads * d_k * d_v)))
    q_all = mixed[:, :la.key_dim].reshape(n, k_heads, d_k)
    k_all = mixed[:, la.key_dim:2 * la.key_dim].reshape(n, k_heads, d_k)
    v_all = mixed[:, 2 * la.key_dim:].reshape(n, v_heads, d_v)
    g_all = -la.A_log.float().exp() * torch.nn.functional.softplus(a[0].float() + la.dt_bias)  # (N, H_v)
    beta_all = b[0].sigmoid()  # (N, H_v)
    trace.inputs[prefix + "X"] = x[0]
    share = v_heads // k_heads  # value heads per key head (transformers' repeat_interleave)
    rows = torch.arange(v_heads)
    ba_rows = (rows // share) * 2 * share + rows % share  # value head h's row of b in in_proj_ba; a's is share on
    weight = la.in_proj_ba.weight
    trace.params[prefix + "w_b"], trace.params[prefix + "w_a"] = weight[ba_rows].detach(), weight[ba_rows + share]
    trace.params[prefix + "A_log"], trace.params[prefix + "dt_bias"] = la.A_log.detach(), la.dt_bias.detach()
    trace.params[prefix + "norm"] = la.norm.weight.detach()
    tokens = Axis("query", run_.tokens)
    keys = Axis("key", run_.tokens)
    for h in range(v_heads):
        kh = h // share
        parts = {"query": (q_all[:, kh], "Q", tokens, kh * d_k),
                 "key": (k_all[:, kh], "K", keys, la.key_dim + kh * d_k),
                 "value": (v_all[:, h], "V", keys, 2 * la.key_dim + h * d_v)}
        for name, (tensor, letter, axis, offset) in parts.items():
            what = Msg("{letter}_h: head {h}'s columns of the layer's projection after its short causal "
                       "convolution (kernel {kernel}) and SiLU", h=h if name == "value" else kh, letter=letter,
                       kernel=la.conv_kernel_size)
            op: Op = CausalConv(prefix + "qkv", prefix + "conv", offset) if la.activation in ("silu", "swish") \
                else Given(what)
            trace.add(Stage(Place(name, index, h), tensor, what, (axis, dim_axis(tensor.shape[1])), op))
        at = Place("state", index, h)
        q_hat, k_hat = record_normed(trace, at.at("query"), at.at("key"), q_all[:, kh].float(),
                                     k_all[:, kh].float(), (tokens, keys), d_k ** -0.5)
        decay, beta = record_gates(trace, at, g_all[:, h], beta_all[:, h].float(), tokens,
                                   Decay(prefix + "X", prefix + "w_a", prefix + "A_log", prefix + "dt_bias", h),
                                   WriteStrength(prefix + "X", prefix + "w_b", h))
        out = record_state(trace, at, q_hat, k_hat, v_all[:, h].float(), g_all[:, h], beta_all[:, h].float(),
                           at.at("value"), decay, beta, tokens, "gated-delta")
        gate_name = prefix + f"z@h{h}"
        trace.inputs[gate_name] = z[0, :, h]  # (N, d_v)
        normed = la.norm(out.to(z.dtype), z[0, :, h])  # the model's own Qwen3NextRMSNormGated
        trace.add(Stage(at.at("gated_norm"), normed,
                        Msg("O_n = RMSNorm(O)·w ⊙ SiLU(z): the head's output normed, then opened by its gate z"),
                        (tokens, dim_axis(d_v)), GatedNorm(at.at("output"), gate_name, prefix + "norm",
                                                           float(la.norm.variance_epsilon))))
    trace.step_axis = token_steps(run_.tokens)


def layer_heads(config: Any) -> tuple[int, ...]:
    """Each layer's heads: a linear layer's value heads (`linear_num_value_heads`, which may be more than the
    attention heads: 32 beside 16 in the 80B model), a full-attention layer's `num_attention_heads`."""
    linear, full = int(config.linear_num_value_heads), int(config.num_attention_heads)
    return tuple(linear if kind == "linear_attention" else full for kind in config.layer_types)


def expert_parameters(size: Callable[[str], int | None], layer: int) -> int | None:
    """Layer `layer`'s MLP where it is a mixture of experts (every `decoder_sparse_step`-th layer when
    `num_experts` is set): its experts, the shared expert and the two routers; None for a dense layer."""
    experts, inner = size("num_experts"), size("moe_intermediate_size")
    if not experts or not inner or (layer + 1) % (size("decoder_sparse_step") or 1):
        return None
    width = size("hidden_size") or 0
    return 3 * width * (experts * inner + (size("shared_expert_intermediate_size") or 0)) + (experts + 1) * width


FAMILY = Family("qwen3_next", causal=True, layer=layer, kv_heads=kv_heads, rope_base=rope_base,
                layer_heads=layer_heads, gated_query=True, own_layers=per_layer_state(is_linear, linear_layer),
                after_heads=(AfterHeads("output gate", output_gate, w_o_reads_heads=False),),
                expert_parameters=expert_parameters,
                checks=(*(ConfigCheck((key,), whole, N_("a whole number, at least 1"))
                          for key in ("linear_num_key_heads", "linear_num_value_heads")),
                        Divides("linear_num_key_heads", "linear_num_value_heads")))
