"""A recorded flex_attention call laid out as stages: scores, scaled, score_mod, the block map, masked, weights, output.

flex_attention computes softmax(mask(score_mod(Q·Kᵀ·scale))) V in one fused call, so its
inner stages are recomputed here the way torch's own reference (`math_attention`) does:
in float32 (float64 stays float64), the user's `score_mod` and `mask_mod` run through four
nested vmaps over (b, h, q_idx, kv_idx). The mask is the kernel's: a tile the BlockMask skips
is -∞, a full tile is computed without the mask_mod, a partial one applies it cell by cell.
The recorded output is the call's own; its largest difference from A·V is said.
"""

from __future__ import annotations

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.contract import UnrecognisedError
from attn_tui.sources.recorder.found import DotOp, Found, Role, ScaleOp, SoftmaxOp, WeightedSumOp
from attn_tui.sources.recorder.hooks import flex_lazy
from attn_tui.sources.recorder.hooks.flex_parts import (
    FULL,
    PARTIAL,
    SKIPPED,
    BlockMapRole,
    ModMaskRole,
    ScoreModRole,
    arguments,
    block_labels,
    block_map,
    describe,
    flat,
    flat_ref,
    is_noop,
    kernel_mask,
    run_user,
    short_place,
    value_of,
)
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import after_output, call_operands
from attn_tui.sources.recorder.refs import Ref, resolve


def from_flex(node: Node, found: Found) -> None:
    """Fill `found` with the stages of one flex_attention call."""
    args = arguments(node)
    q_node, k_node, v_node = args.get("query"), args.get("key"), args.get("value")
    if not all(isinstance(t, Node) for t in (q_node, k_node, v_node)):
        raise UnrecognisedError("flex_attention read no recorded tensors")
    assert isinstance(q_node, Node) and isinstance(k_node, Node) and isinstance(v_node, Node)
    if q_node.value.dim() != 4:
        raise UnrecognisedError("flex_attention with queries that are not (B, H, L, E)")
    q_ref, k_ref, v_ref = resolve(q_node), resolve(k_node), resolve(v_node)
    batch, heads, length, width = q_ref.shape
    group = heads // k_ref.shape[1]
    if group > 1:  # enable_gqa: query head h reads key/value head h // group
        k_ref, v_ref = (Ref(r.node, r.base, r.index.repeat_interleave(group, dim=1)) for r in (k_ref, v_ref))
    k_ref, v_ref = (Ref(r.node, r.base, r.index.expand(batch, *r.shape[1:])) for r in (k_ref, v_ref))
    found.batch, found.heads = batch, heads  # slice n = b * heads + h, as flex's own (b, h) count them
    q, k, v = (flat_ref(r) for r in (q_ref, k_ref, v_ref))
    keys = k.shape[-2]
    q_name, k_name, v_name = call_operands(found, q, k, v)
    scale = args.get("scale")
    factor = float(scale) if scale is not None else width ** -0.5
    working = torch.float64 if q_node.value.dtype == torch.float64 else torch.float32
    origin = node.origin
    score_mod, block_mask = args.get("score_mod"), value_of(args.get("block_mask"))
    mod_fn = None if block_mask is None else getattr(block_mask, "mask_mod", None)
    shape4 = (batch, heads, length, keys)
    if batch * heads * length * keys > flex_lazy.LAZY_CELLS:
        flex_lazy.lay_out_lazily(found, node, (q_name, k_name, v_name), factor, working, score_mod, block_mask, shape4)
        return
    qv = found.role(q_name).data.to(working)
    kv = found.role(k_name).data.to(working)
    scores = qv @ kv.transpose(-2, -1)  # (n, L, S)
    found.add(Role("scores", scores, DotOp(q_name, k_name), origin,
                   Msg("S = Q·Kᵀ (inside flex_attention)"), ("query", "key")))
    scaled = (scores * factor).to(working)
    last = found.add(Role("scaled", scaled, ScaleOp("scores", factor, Msg("flex_attention's scale")), origin,
                          Msg("S' = S · {factor}", factor=f"{factor:.4g}"), ("query", "key")))
    index = [torch.arange(size, device=q_node.value.device) for size in shape4]  # where the user's mods ran
    if not is_noop(score_mod, "_identity"):
        assert score_mod is not None
        name, where = describe(score_mod)
        modded = run_user(score_mod, scaled.reshape(shape4), *index, with_score=True).to(working).reshape(scaled.shape)
        last = found.add(Role("score_mod", modded, ScoreModRole("", last, name, where), origin,
                              Msg("S_mod = {name}(S', b, h, q_idx, kv_idx)   ({where})", name=name,
                                  where=short_place(where)), ("query", "key")))
    if block_mask is not None:
        q_block, kv_block = (int(x) for x in block_mask.BLOCK_SIZE)
        tiles = block_map(block_mask, batch, heads, length, keys)  # (B, H, rows, cols)
        mod_name, mod_where = describe(mod_fn)
        mod = f"{mod_name} ({short_place(mod_where)})"
        noop = is_noop(mod_fn, "noop_mask")
        mod_values = None if noop or mod_fn is None else run_user(mod_fn, *index, with_score=False).bool().cpu()
        allowed = flat(kernel_mask(tiles, mod_values, (q_block, kv_block), slice(0, length), slice(0, keys)))
        counts = [int((tiles == kind).sum()) for kind in (FULL, PARTIAL, SKIPPED)]
        found.add(Role("block_map", flat(tiles), BlockMapRole("", (q_block, kv_block), (length, keys), mod), origin,
                       Msg("BlockMask tiles of {q}×{kv}: {full} full, {partial} partial, {skipped} skipped "
                           "(2 = full, 1 = partial, 0 = skipped; all heads)", q=q_block, kv=kv_block,
                           full=counts[0], partial=counts[1], skipped=counts[2]),
                       ("q_block", "kv_block"),
                       labels=(block_labels(tiles.shape[2], q_block, length, "q"),
                               block_labels(tiles.shape[3], kv_block, keys, "k"))))
        held = None if mod_values is None else flat(mod_values.expand(shape4))
        data = found.role(last).data
        masked = data.masked_fill(~allowed.to(data.device), -torch.inf)
        last = found.add(Role("masked", masked, ModMaskRole("", last, allowed, held, mod, (q_block, kv_block)), origin,
                              Msg("M = {source} where the block mask and mask_mod {mod} allow, -∞ where not",
                                  source=last, mod=mod), ("query", "key")))
    final = found.role(last).data
    weights = torch.softmax(final, dim=-1).masked_fill(torch.isneginf(final).all(dim=-1, keepdim=True), 0.0)
    found.add(Role("weights", weights, SoftmaxOp(last), origin,
                   Msg("A = softmax({source}) over keys (computed here: flex_attention does not return it)",
                       source=last), ("query", "key")))
    output = flat_ref(resolve(node))
    own = output.values
    again = weights.to(own.dtype) @ found.role(v_name).data.to(own.dtype)  # (n, L, dv)
    gap = float((again.double() - own.double()).abs().max()) if own.numel() else 0.0
    found.add(Role("output", own, WeightedSumOp("weights", v_name), origin,
                   Msg("O = A·V: what flex_attention returned (largest difference from A·V recomputed here: "
                       "{gap})", gap=f"{gap:.3g}"), ("query", "dim")))
    found.kind = "flex"
    after_output(found, output, "output")
