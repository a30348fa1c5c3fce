"""Attention that torch computes in one call (SDPA, nn.MultiheadAttention): its inner stages, recomputed.

The call hides its scores and weights, so they are computed here from the very q, k, v
(and projection weights) the call read, the way torch's reference implementation does.
The call's own result is kept as the last stage, so the recorded output is what the
code got back, bit for bit; for a MultiheadAttention asked for per-head weights, those
weights are its own too.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any

import torch
import torch.nn.functional as F

from attn_tui.i18n import Msg
from attn_tui.sources.recorder import sdpa_lazy
from attn_tui.sources.recorder.beside import beside_kernel, kernel_line
from attn_tui.sources.recorder.chain import MASK_AT
from attn_tui.sources.recorder.found import (
    ConcatOp,
    DotOp,
    Found,
    GivenOp,
    LinearOp,
    MaskOp,
    Role,
    ScaleOp,
    SoftmaxOp,
    SumOp,
    WeightedSumOp,
)
from attn_tui.sources.recorder.maskparts import mask_key
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import after_output, call_operands
from attn_tui.sources.recorder.packed import packing
from attn_tui.sources.recorder.recognise import UnrecognisedError
from attn_tui.sources.recorder.refs import Ref, broadcast_shape, resolve
from attn_tui.sources.recorder.slices import Layout, layout
from attn_tui.trace.masks import MaskSpec

SDPA_ARGS = ("query", "key", "value", "attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa")


def _arguments(node: Node, names: tuple[str, ...] | None = None) -> dict[str, Any]:
    if names is None:
        bound = inspect.signature(F.multi_head_attention_forward).bind(*node.inputs, **node.kwargs)
        bound.apply_defaults()
        return dict(bound.arguments)
    out = dict(zip(names, node.inputs))
    out.update(node.kwargs)
    return out


def _value(arg: Any) -> Any:
    return arg.value if isinstance(arg, Node) else arg


def _softmax(masked: torch.Tensor) -> torch.Tensor:
    """Softmax over keys; a row with nothing to attend gets zeros (as SDPA returns), never NaN."""
    weights = torch.softmax(masked, dim=-1)
    first = torch.isnan(weights[..., :1])  # (…, L, 1): a row of -inf comes out NaN, so only those rows are looked at
    if not bool(first.any()):
        return weights
    return weights.masked_fill(first & torch.isneginf(masked).all(dim=-1, keepdim=True), 0.0)


def _mask_and_fill(mask: torch.Tensor | None,
                   shape: tuple[int, ...]) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """A bool mask (True = may attend) and an additive float mask, as SDPA reads `attn_mask`; each compared in
    the shape the code passed it and only then broadcast to `shape` (a view: one mask for every head, not a copy)."""
    if mask is None:
        return None, None
    given = mask.cpu()
    if mask.dtype == torch.bool:
        return given.expand(shape), None
    if bool(((given == 0) | (given <= MASK_AT)).all()):
        return (given == 0).expand(shape), given.expand(shape)
    return None, given.expand(shape)


@functools.lru_cache(maxsize=8)
def _causal(length: int, keys: int) -> torch.Tensor:
    """(L, S) True on and below the diagonal: SDPA's is_causal, made once per shape (every layer reads it)."""
    return torch.ones(length, keys, dtype=torch.bool).tril()


def _blocked(allowed: torch.Tensor) -> torch.Tensor:
    """~allowed, (n, L, S): one mask broadcast to every slice (stride 0) is negated once and broadcast again."""
    if allowed.dim() == 3 and allowed.stride(0) == 0:
        return ~allowed[0]
    return ~allowed


def _wide(scores: torch.Tensor) -> torch.Tensor:
    """Scores in at least float32 for the softmax: float16 is promoted, float64 stays float64."""
    return scores.to(torch.promote_types(scores.dtype, torch.float32))


def _grouped(ref: Ref, query_heads: int) -> Ref:
    """SDPA's `enable_gqa`: each key/value head serves query_heads / key_heads query heads, in order."""
    kv_heads = ref.index.shape[-3]
    if kv_heads == query_heads or query_heads % kv_heads:
        return ref
    return Ref(ref.node, ref.base, ref.index.repeat_interleave(query_heads // kv_heads, dim=-3))


def from_sdpa(node: Node, found: Found) -> None:
    args = _arguments(node, SDPA_ARGS)
    q_node, k_node, v_node = args.get("query"), args.get("key"), args.get("value")
    if not all(isinstance(t, Node) for t in (q_node, k_node, v_node)):
        raise UnrecognisedError("scaled_dot_product_attention read no recorded tensors")
    assert isinstance(q_node, Node) and isinstance(k_node, Node) and isinstance(v_node, Node)
    q_ref, k_ref, v_ref = resolve(q_node), resolve(k_node), resolve(v_node)
    packed = packing(q_node, q_ref, k_ref.shape[-3], bool(args.get("is_causal"))) if k_ref.index.dim() >= 3 else None
    if packed is not None:  # one token's query heads folded into the query axis: shown as the heads they are
        scores_shape = (*broadcast_shape(q_ref.shape[:-2], k_ref.shape[:-2]), q_ref.shape[-2], k_ref.shape[-2])
        args["attn_mask"] = packed.mask(_value(args.get("attn_mask")), scores_shape)  # (…, G, R, S) as (…, H, 1, S)
        q_ref = packed.unfolded
    if (args.get("enable_gqa") or packed is not None) and q_ref.index.dim() >= 3 and k_ref.index.dim() >= 3:
        k_ref, v_ref = (_grouped(r, q_ref.shape[-3]) for r in (k_ref, v_ref))
    batch_shape = broadcast_shape(
        q_ref.shape[:-2], k_ref.shape[:-2], v_ref.shape[:-2])
    q_ref = Ref(q_ref.node, q_ref.base, q_ref.index.expand(*batch_shape, *q_ref.shape[-2:]))
    k_ref = Ref(k_ref.node, k_ref.base, k_ref.index.expand(*batch_shape, *k_ref.shape[-2:]))
    v_ref = Ref(v_ref.node, v_ref.base, v_ref.index.expand(*batch_shape, *v_ref.shape[-2:]))
    lead = tuple(batch_shape)
    lay = layout(lead, q_ref)
    batch, heads = lay.batch, lay.heads
    found.batch, found.heads = batch, heads
    q, k, v = (lay.flat_ref(r) for r in (q_ref, k_ref, v_ref))
    length, width = q.shape[-2:]
    keys = k.shape[-2]
    q_name, k_name, v_name = call_operands(found, q, k, v)
    scale = args.get("scale")
    factor = float(scale) if scale is not None else 1.0 / math.sqrt(width)
    out = resolve(node) if packed is None else packed.output(resolve(node))  # (…, L, dv) as the query's rows
    if math.prod(lead) * length * keys > sdpa_lazy.LAZY_CELLS:
        _lazily(found, node, args, lay, (q_name, k_name, v_name), factor, out)
        return
    qv, kv = found.role(q_name).data, found.role(k_name).data
    scores = qv @ kv.transpose(-2, -1)  # (n, L, S)
    origin = node.origin
    found.add(Role("scores", scores, DotOp(q_name, k_name), origin,
                   Msg("S = Q·Kᵀ (inside scaled_dot_product_attention)"), ("query", "key")))
    scaled = scores * factor
    found.add(Role("scaled", scaled, ScaleOp("scores", factor, Msg("SDPA's scale")), origin,
                   Msg("S' = S · {factor}", factor=f"{factor:.4g}"), ("query", "key")))
    last = "scaled"
    mask = _value(args.get("attn_mask"))
    shape = (*lead, length, keys)
    allowed, additive = _mask_and_fill(mask, shape)
    if args.get("is_causal"):
        causal = _causal(length, keys).expand(shape)
        allowed = causal if allowed is None else allowed & causal
    if additive is not None and allowed is None:
        bias = found.add(Role("bias", lay.flat(additive).to(scaled.device),
                              GivenOp(Msg("attn_mask, added to the scores")), origin,
                              Msg("B: the float attn_mask"), ("query", "key")))
        last = found.add(Role("biased", scaled + found.role(bias).data.to(scaled.dtype), SumOp(("scaled", bias)),
                              origin, Msg("S' + B"), ("query", "key")))
    elif allowed is not None:
        allowed_flat = lay.flat(allowed)
        data = found.role(last).data
        masked = data.masked_fill(_blocked(allowed_flat).to(data.device), -math.inf)
        own = mask is not None and not args.get("is_causal")  # SDPA's own attn_mask, as the code holds it
        held = lay.flat(mask.expand(shape).cpu()) if own else None  # bool: True = may attend; float: 0 / -inf
        rule = "" if held is None else "sdpa_bool" if held.dtype == torch.bool else "additive"
        op = MaskOp(last, allowed_flat, -math.inf, held, rule, parts=True)
        if mask is None and length == keys:  # is_causal alone: its parts are known, not looked for in the matrix
            op.told[mask_key(allowed_flat[0])] = MaskSpec((length, keys), causal=True, dense=allowed_flat[0])
        last = found.add(Role("masked", masked, op, origin,
                              Msg("M = S' where the mask allows, -∞ where it does not"), ("query", "key")))
    found.add(Role("weights", _softmax(_wide(found.role(last).data)).to(scores.dtype), SoftmaxOp(last), origin,
                   Msg("A = softmax({source}) over keys (computed here: SDPA does not return it)", source=last),
                   ("query", "key")))
    output = lay.flat_ref(out)
    dropout = float(args.get("dropout_p") or 0.0)
    if dropout > 0:  # SDPA drops weights whenever dropout_p > 0, in training or not: its output is no A·V
        found.warnings.append(Msg("scaled_dot_product_attention ran with dropout_p={p}: its output is not the "
                                  "product of the weights shown", p=f"{dropout:g}"))
    made = GivenOp(Msg("returned by scaled_dot_product_attention after dropout")) if dropout > 0 else \
        WeightedSumOp("weights", v_name)
    kernel = output.values  # (n, L, dv) the kernel's own numbers
    formula: Msg = Msg("O = A·V: what scaled_dot_product_attention returned")
    if dropout == 0:
        formula = beside_kernel(kernel, found.role("weights").data, found.role(v_name).data, found)
    found.add(Role("output", kernel, made, origin, formula, ("query", "dim")))
    found.kind = "scaled_dot"
    after_output(found, output, "output")


def _lazily(found: Found, node: Node, args: dict[str, Any], lay: Layout, names: tuple[str, str, str],
            factor: float, out: Ref) -> None:
    """A long call's stages by tiles (sdpa_lazy.py): the same roles, formulas and output line as the whole layout."""
    q_name, k_name, v_name = names
    mask = _value(args.get("attn_mask"))
    folded, which = (None, None) if mask is None else sdpa_lazy.compact_mask(mask, lay.lead, lay)
    qv = found.role(q_name).data  # (n, L, E)
    recipe = sdpa_lazy.SdpaRecipe(qv, found.role(k_name).data, factor, bool(args.get("is_causal")),
                                  torch.empty(qv.shape[:2], dtype=_wide(qv[:0]).dtype, device=qv.device), folded,
                                  which, sdpa_lazy.mask_kind(mask, MASK_AT))
    output = lay.flat_ref(out)
    kernel = output.values  # (n, L, dv) the kernel's own numbers
    formulas = {
        "scores": Msg("S = Q·Kᵀ (inside scaled_dot_product_attention; computed by tiles)"),
        "scaled": Msg("S' = S · {factor}", factor=f"{factor:.4g}"),
        "bias": Msg("B: the float attn_mask"), "biased": Msg("S' + B"),
        "masked": Msg("M = S' where the mask allows, -∞ where it does not"),
        "weights": Msg("A = softmax({source}) over keys (computed here: SDPA does not return it)",
                       source="biased" if recipe.mask_kind == "bias" else "masked" if recipe.causal or
                       recipe.mask_kind in ("bool", "gate") else "scaled")}
    values = found.role(v_name).data
    gap = sdpa_lazy.lay_out_lazily(found, recipe, (q_name, k_name), kernel, values, node.origin, formulas)
    dropout = float(args.get("dropout_p") or 0.0)
    if dropout > 0:
        found.warnings.append(Msg("scaled_dot_product_attention ran with dropout_p={p}: its output is not the "
                                  "product of the weights shown", p=f"{dropout:g}"))
        made: Any = GivenOp(Msg("returned by scaled_dot_product_attention after dropout"))
        formula = Msg("O = A·V: what scaled_dot_product_attention returned")
    else:
        made = WeightedSumOp("weights", v_name)
        formula = kernel_line(gap, values, found)
    found.add(Role("output", kernel, made, node.origin, formula, ("query", "dim")))
    found.kind = "scaled_dot"
    after_output(found, output, "output")


def from_mha(node: Node, found: Found) -> None:
    """nn.MultiheadAttention's forward: projections, per-head stages, heads side by side, out_proj."""
    args = _arguments(node)
    for unsupported in ("bias_k", "bias_v", "static_k", "static_v"):
        if args.get(unsupported) is not None:
            raise UnrecognisedError(f"MultiheadAttention with {unsupported}")
    if args.get("add_zero_attn"):
        raise UnrecognisedError("MultiheadAttention with add_zero_attn")
    query, key, value = args["query"], args["key"], args["value"]
    if not all(isinstance(t, Node) for t in (query, key, value)):
        raise UnrecognisedError("MultiheadAttention read no recorded tensors")
    heads = int(args["num_heads"])
    unbatched = query.value.dim() == 2
    refs = [resolve(t) for t in (query, key, value)]
    if unbatched:
        refs = [Ref(r.node, r.base, r.index[:, None, :]) for r in refs]
    q_in, k_in, v_in = (Ref(r.node, r.base, r.index.transpose(0, 1)) for r in refs)  # (B, L|S, E)
    batch, length, embed = q_in.shape
    keys = k_in.shape[1]
    head_dim = embed // heads
    found.batch, found.heads = batch, heads
    w_in, b_in = _value(args["in_proj_weight"]), _value(args["in_proj_bias"])
    if args.get("use_separate_proj_weight"):
        w_q, w_k, w_v = (_value(args[f"{c}_proj_weight"]) for c in "qkv")
    else:
        w_q, w_k, w_v = w_in.chunk(3)
    b_q, b_k, b_v = (None, None, None) if b_in is None else b_in.chunk(3)
    prefix = _prefix(args["in_proj_weight"] if isinstance(args["in_proj_weight"], Node) else
                     args.get("q_proj_weight"))
    origin = node.origin
    inputs: list[tuple[str, Ref]] = []  # the tensors the projections read, each once (self-attention: one)

    def input_role(ref: Ref, preferred: str) -> str:
        for name, known in inputs:
            if known.base.data_ptr() == ref.base.data_ptr() and known.index.shape == ref.index.shape and (
                    known.index is ref.index or torch.equal(known.index, ref.index)):
                return name
        name = found.add(Role(found.fresh(preferred), ref.values, GivenOp(Msg("the tensor the code passed in")),
                              ref.origin, Msg("{name}: what the projections read", name=preferred),
                              ("token", "dim"), shared=True))
        inputs.append((name, ref))
        return name

    sources = [input_role(q_in, "input"), input_role(k_in, "key_input"), input_role(v_in, "value_input")]
    offsets = tuple(h * head_dim for _ in range(batch) for h in range(heads))
    per_head = []
    for (name, weight, bias, source_name, x) in (("query", w_q, b_q, sources[0], q_in),
                                                 ("key", w_k, b_k, sources[1], k_in),
                                                 ("value", w_v, b_v, sources[2], v_in)):
        w_name = f"{prefix}W_{name[0]}"
        b_name = None if bias is None else f"{prefix}b_{name[0]}"
        found.params[w_name] = weight
        if bias is not None and b_name is not None:
            found.params[b_name] = bias
        made = F.linear(x.values, weight, bias)  # (B, n_rows, E)
        data = made.reshape(batch, -1, heads, head_dim).transpose(1, 2).reshape(batch * heads, -1, head_dim)
        per_head.append(data)
        found.add(Role(name, data, LinearOp(source_name, w_name, b_name, offsets), origin,
                       Msg("{role} = X·{weight}ᵀ + {bias} (this head's rows)", role=name, weight=w_name,
                           bias=b_name or "0"), ("query" if name == "query" else "key", "dim")))
    qh, kh, vh = per_head
    scores = qh @ kh.transpose(-2, -1)  # (n, L, S)
    found.add(Role("scores", scores, DotOp("query", "key"), origin, Msg("S = Q·Kᵀ (inside MultiheadAttention)"),
                   ("query", "key")))
    factor = 1.0 / math.sqrt(head_dim)
    found.add(Role("scaled", scores * factor, ScaleOp("scores", factor, Msg("1/√d_k of each head")), origin,
                   Msg("S' = S / √{d}", d=head_dim), ("query", "key")))
    allowed = _mha_allowed(args, batch, heads, length, keys)
    last = "scaled"
    if allowed is not None:
        masked = (scores * factor).masked_fill(~allowed.to(scores.device), -math.inf)
        padding = _value(args.get("key_padding_mask"))
        held = None  # the code's own key_padding_mask (True = blocked), when it is the only mask given
        converted = padding is not None and padding.dtype != torch.bool and bool(
            ((padding == 0) | torch.isneginf(padding)).all())  # MHA turns a bool mask into 0 / -inf before this call
        if padding is not None and (padding.dtype == torch.bool or converted) \
                and _value(args.get("attn_mask")) is None and not args.get("is_causal"):
            pad = (padding if padding.dtype == torch.bool else torch.isneginf(padding)).cpu()  # True: as passed
            held = pad.reshape(batch, 1, 1, keys).expand(batch, heads, length, keys).reshape(batch * heads, length,
                                                                                             keys)
        last = found.add(Role("masked", masked, MaskOp("scaled", allowed, -math.inf, held,
                                                       "key_padding" if held is not None else ""), origin,
                              Msg("M = S' where the masks allow, -∞ where they do not"), ("query", "key")))
    weights = _softmax(_wide(found.role(last).data)).to(scores.dtype)
    returned = node.returned[1] if node.returned is not None and len(node.returned) > 1 else None
    own = returned is not None and not args.get("average_attn_weights", True)
    if own and returned is not None:
        weights = returned.reshape(batch * heads, length, keys)
    found.add(Role("weights", weights, SoftmaxOp(last), origin,
                   Msg("A = softmax(M) over keys: returned by MultiheadAttention") if own else
                   Msg("A = softmax(M) over keys (computed here from the module's own weights)"), ("query", "key")))
    outputs = weights @ vh  # (n, L, d)
    found.add(Role("output", outputs, WeightedSumOp("weights", "value"), origin, Msg("O = A·V for each head"),
                   ("query", "dim")))
    concat = outputs.reshape(batch, heads, length, head_dim).transpose(1, 2).reshape(batch, length, embed)
    found.add(Role("concat", concat, ConcatOp("output"), origin, Msg("C = [O_0 | O_1 | … ]"), ("query", "dim"),
                   shared=True))
    result = resolve(node)  # (L, B, E) or (L, E): what the module returned, before its batch_first transpose
    index = result.index[:, None, :] if unbatched else result.index
    projected = Ref(result.node, result.base, index.transpose(0, 1))
    w_out, b_out = _value(args["out_proj_weight"]), _value(args["out_proj_bias"])
    found.params[f"{prefix}W_o"] = w_out
    if b_out is not None:
        found.params[f"{prefix}b_o"] = b_out
    found.add(Role("projected", projected.values, LinearOp("concat", f"{prefix}W_o",
                                                           None if b_out is None else f"{prefix}b_o",
                                                           (0,) * (batch * heads)),
                   origin, Msg("Y = C·W_oᵀ + b_o: what MultiheadAttention returned"), ("query", "dim"), shared=True))
    if returned is not None and args.get("average_attn_weights", True):
        found.add(Role("mean_weights", returned.reshape(batch, length, keys),
                       GivenOp(Msg("the mean of the heads' weights, as MultiheadAttention returned it")), origin,
                       Msg("mean over heads of A"), ("query", "key"), shared=True))
    found.kind = "multihead"
    if args.get("training") and float(args.get("dropout_p") or 0.0) > 0:
        found.warnings.append(Msg("MultiheadAttention ran in training mode with dropout: its output is not the "
                                  "product of the weights shown"))


def _prefix(node: Any) -> str:
    name = node.param if isinstance(node, Node) and node.param else ""
    return name.rsplit(".", 1)[0] + "." if "." in name else ""


def _mha_allowed(args: dict[str, Any], batch: int, heads: int, length: int, keys: int) -> torch.Tensor | None:
    """(B·H, L, S) True = may attend: key_padding_mask, attn_mask and is_causal, as MultiheadAttention reads them."""
    allowed = torch.ones(batch, heads, length, keys, dtype=torch.bool)
    seen = False
    padding = _value(args.get("key_padding_mask"))
    if padding is not None:
        pad = (padding if padding.dtype == torch.bool else padding <= MASK_AT).cpu()
        allowed &= ~pad.reshape(batch, 1, 1, keys)
        seen = True
    mask = _value(args.get("attn_mask"))
    if mask is not None:
        hidden = (mask if mask.dtype == torch.bool else mask <= MASK_AT).cpu()
        allowed &= ~hidden.reshape(-1, heads if hidden.dim() == 3 else 1, length, keys).expand_as(allowed) \
            if hidden.dim() == 3 else ~hidden.reshape(1, 1, length, keys)
        seen = True
    elif args.get("is_causal"):
        allowed &= torch.ones(length, keys, dtype=torch.bool).tril()
        seen = True
    return allowed.reshape(batch * heads, length, keys) if seen else None
