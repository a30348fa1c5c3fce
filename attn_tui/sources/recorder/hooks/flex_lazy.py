"""A long flex_attention call laid out lazily: its score stages are computed by tiles, for what is on screen.

Past LAZY_CELLS scores (a 4k-token call of 8 heads is 134M) nothing (L, S) is held: the
scores, the scaled scores, the score_mod's output, the mask and the weights of any tile are
computed when asked for (`trace.lazy`), calling the user's score_mod and mask_mod on that
tile's indices only. One pass over blocks of query rows, made here, keeps each row's
log-sum-exp, the stages' ranges and the output recomputed as A·V to compare with the call's own.
The user's functions run in the recording process; a lazy stage never crosses to another one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.found import DotOp, Found, GivenOp, Role, ScaleOp, SoftmaxOp, WeightedSumOp
from attn_tui.sources.recorder.hooks.flex_parts import (
    FULL,
    PARTIAL,
    SKIPPED,
    BlockMapRole,
    ScoreModRole,
    block_labels,
    block_map,
    describe,
    is_noop,
    kernel_mask,
    run_user,
    short_place,
)
from attn_tui.sources.recorder.lazy_slices import Slices, fold_kept
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import after_output
from attn_tui.sources.recorder.refs import Ref, resolve
from attn_tui.trace import ops
from attn_tui.trace.lazy import ScoreTiles
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.stage_stats import StageStats
from attn_tui.trace.values import fold_heads, fold_row_sums

LAZY_CELLS = 1 << 22  # scores of one call (all heads) above which its score stages are computed by tiles
PASS_CELLS = 1 << 22  # scores computed at once by the streaming pass

Allow = Callable[[slice, slice], torch.Tensor]  # (rows, cols) → (n, rows, cols) True = the kernel attends


@dataclass(eq=False)
class FlexTiles(ScoreTiles):
    """The score stages of one flex call: `pre` runs Q·Kᵀ, the scale and the score_mod on a tile; `allow` masks it."""

    allow: Allow | None = None

    def masked(self, before: torch.Tensor, rows: slice, cols: slice) -> torch.Tensor:
        if self.allow is None:
            return before
        return before.masked_fill(~self.allow(rows, cols).to(before.device), -torch.inf)


@dataclass(frozen=True, eq=False)
class TiledModMask(MaskSpec):
    """The kernel's mask of one slice, computed by tiles from the block map and the mask_mod (never whole)."""

    allow: Allow | None = None
    mod_tile: Allow | None = None  # (rows, cols) → (n, rows, cols) what the mask_mod returned; None for noop_mask
    slice_n: int = 0

    def tile(self, rows: slice, cols: slice) -> torch.Tensor:
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        assert self.allow is not None
        return self.allow(slice(r0, r1), slice(c0, c1))[self.slice_n]

    def _mod(self, rows: slice, cols: slice) -> torch.Tensor | None:
        return None if self.mod_tile is None else self.mod_tile(rows, cols)[self.slice_n]

    def reasons(self, i: int, j: int) -> list[Msg]:
        if bool(self.tile(slice(i, i + 1), slice(j, j + 1))[0, 0]):
            return []
        return [self.whole_at(i, j)._mod_reason(i, j)]

    def whole_at(self, i: int, j: int) -> MaskSpec:
        """A plain spec of the one cell (i, j), enough to say why it is blocked."""
        mod = self._mod(slice(i, i + 1), slice(j, j + 1))
        code = None if mod is None else torch.ones(self.shape, dtype=torch.bool).index_put_(
            (torch.tensor([i]), torch.tensor([j])), mod.reshape(1))
        return MaskSpec(self.shape, code_mask=code, mod=self.mod, mod_at=self.mod_at)

    def whole(self) -> MaskSpec:
        """The plain MaskSpec of the whole slice (for a call small enough to hold its mask whole)."""
        everything = (slice(0, self.shape[0]), slice(0, self.shape[1]))
        return MaskSpec(self.shape, dense=self.tile(*everything), code_mask=self._mod(*everything),
                        code_rule="mask_mod", code_fill="-inf", mod=self.mod, mod_at=self.mod_at)


@dataclass(frozen=True)
class LazyMaskRole(GivenOp):
    source: str
    family: FlexTiles
    mod: str
    block: tuple[int, int]
    mod_tile: Allow | None

    def core(self, at: Callable[[str, int | None], ops.Place], n: int, h: int | None, heads: int) -> ops.Op:
        if self.family.allow is None:
            return ops.Masking(at(self.source, h), None, "-inf")
        spec = TiledModMask(self.family.shape, code_rule="mask_mod", code_fill="-inf", mod=self.mod,
                            mod_at=(n // heads, n % heads, *self.block), allow=self.family.allow,
                            mod_tile=self.mod_tile, slice_n=n)
        return ops.Masking(at(self.source, h), spec, "-inf")


def lay_out_lazily(found: Found, node: Node, names: tuple[str, str, str], factor: float, working: torch.dtype,
                   score_mod: Any, block_mask: Any, shape4: tuple[int, int, int, int]) -> None:
    """The roles of a long call: query, key and value are whole, the score stages lazy."""
    batch, heads, length, keys = shape4
    q_name, k_name, v_name = names
    origin = node.origin
    q = found.role(q_name).data.to(working)  # (n, L, E)
    k = found.role(k_name).data.to(working)  # (n, S, E)
    v = found.role(v_name).data  # (n, S, dv)
    mod_fn = None if block_mask is None else getattr(block_mask, "mask_mod", None)
    modded = not is_noop(score_mod, "_identity")
    device = q.device  # the user's mods index their own tensors (a document id per position) where the code ran
    b_at, h_at = torch.arange(batch, device=device), torch.arange(heads, device=device)

    def span(start: int, stop: int) -> torch.Tensor:
        return torch.arange(start, stop, device=device)

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        r0, r1, _ = rows.indices(length)
        c0, c1, _ = cols.indices(keys)
        scores = q[:, r0:r1] @ k[:, c0:c1].transpose(-2, -1)  # (n, rows, cols)
        scaled = (scores * factor).to(working)
        out = {"scores": scores, "scaled": scaled}
        if modded:
            tile = scaled.reshape(batch, heads, r1 - r0, c1 - c0)
            out["score_mod"] = run_user(score_mod, tile, b_at, h_at, span(r0, r1), span(c0, c1),
                                        with_score=True).to(working).reshape(scaled.shape)
        return out

    allow: Allow | None = None
    mod_tile: Allow | None = None
    tiles = None
    if block_mask is not None:
        block = (int(block_mask.BLOCK_SIZE[0]), int(block_mask.BLOCK_SIZE[1]))
        tiles = block_map(block_mask, batch, heads, length, keys)  # (B, H, rows, cols)
        tile_size = block
        mod_live = None if is_noop(mod_fn, "noop_mask") else mod_fn

        def mod_values(rows: slice, cols: slice) -> torch.Tensor:
            r0, r1, _ = rows.indices(length)
            c0, c1, _ = cols.indices(keys)
            assert mod_live is not None
            made = run_user(mod_live, b_at, h_at, span(r0, r1), span(c0, c1), with_score=False)
            return made.bool().cpu().expand(batch, heads, r1 - r0, c1 - c0).reshape(batch * heads, r1 - r0, c1 - c0)

        mod_tile = None if mod_live is None else mod_values

        def kernel_allows(rows: slice, cols: slice) -> torch.Tensor:
            assert tiles is not None
            r0, r1, _ = rows.indices(length)
            c0, c1, _ = cols.indices(keys)
            values = None if mod_tile is None else mod_tile(slice(r0, r1), slice(c0, c1)).reshape(
                batch, heads, r1 - r0, c1 - c0)
            return kernel_mask(tiles, values, tile_size, slice(r0, r1), slice(c0, c1)).reshape(
                batch * heads, r1 - r0, c1 - c0)

        allow = kernel_allows

    last = "score_mod" if modded else "scaled"
    family = FlexTiles(pre, last, (length, keys), None, "-inf", 1.0, allow=allow)
    stats = {name: [StageStats() for _ in range(batch * heads)]
             for name in ("scores", "scaled", *(("score_mod",) if modded else ()), "masked", "weights")}
    made_by = resolve(node)
    own = Ref(made_by.node, made_by.base, made_by.index.reshape(batch * heads, length, -1))
    own_values = own.values
    gap = 0.0
    rows_at_once = max(1, PASS_CELLS // max(1, batch * heads * keys))
    lse = torch.empty(batch * heads, length, dtype=working, device=device)
    for start in range(0, length, rows_at_once):
        rows = slice(start, min(length, start + rows_at_once))
        made = pre(rows, slice(0, keys))
        kept = None if allow is None else allow(rows, slice(0, keys)).to(device)  # (n, rows, S) kernel computes
        masked = made[last] if kept is None else made[last].masked_fill(~kept, -torch.inf)  # (n, rows, S)
        top = masked.amax(dim=-1)
        empty = torch.isneginf(top)
        shift = top.masked_fill(empty, 0.0)
        weights = (masked - shift[..., None]).exp()
        total = weights.sum(dim=-1)
        weights = (weights / total[..., None]).masked_fill(empty[..., None], 0.0)
        lse[:, rows] = (shift + total.log()).masked_fill(empty, -torch.inf)
        again = weights.to(own_values.dtype) @ v.to(own_values.dtype)  # (n, rows, dv)
        if again.numel():
            gap = max(gap, float((again.double() - own_values[:, rows].double()).abs().max()))
        for name in stats:
            if name in made and made[name] is not masked:
                fold_heads(stats[name], made[name])
        for name, made_now in (("masked", masked), ("weights", weights)):
            if kept is None:
                fold_heads(stats[name], made_now)
            else:  # each slice has a mask of its own: -∞ where the kernel skips is no overflow
                fold_kept(stats[name], made_now, kept)
        fold_row_sums(stats["weights"], weights, start, empty, None)
    family.lse = lse
    dtype = q.dtype

    def lazy_role(name: str, op: Any, formula: Msg) -> str:
        return found.add(Role(name, Slices(family, name, dtype, device), op, origin, formula,  # type: ignore[arg-type]
                              ("query", "key"), stats=stats.get(name)))

    lazy_role("scores", DotOp(q_name, k_name), Msg("S = Q·Kᵀ (inside flex_attention; computed by tiles)"))
    source = lazy_role("scaled", ScaleOp("scores", factor, Msg("flex_attention's scale")),
                       Msg("S' = S · {factor}", factor=f"{factor:.4g}"))
    if modded:
        name, where = describe(score_mod)
        source = lazy_role("score_mod", ScoreModRole("", source, name, where),
                           Msg("S_mod = {name}(S', b, h, q_idx, kv_idx)   ({where})", name=name,
                               where=short_place(where)))
    mod = ""
    if tiles is not None:
        mod_name, mod_where = describe(mod_fn)
        mod = f"{mod_name} ({short_place(mod_where)})"
        block = (int(block_mask.BLOCK_SIZE[0]), int(block_mask.BLOCK_SIZE[1]))
        counts = [int((tiles == kind).sum()) for kind in (FULL, PARTIAL, SKIPPED)]
        found.add(Role("block_map", tiles.reshape(batch * heads, *tiles.shape[2:]),
                       BlockMapRole("", block, (length, keys), mod), origin,
                       Msg("BlockMask tiles of {q}×{kv}: {full} full, {partial} partial, {skipped} skipped "
                           "(2 = full, 1 = partial, 0 = skipped; all heads)", q=block[0], kv=block[1],
                           full=counts[0], partial=counts[1], skipped=counts[2]),
                       ("q_block", "kv_block"), labels=(block_labels(tiles.shape[2], block[0], length, "q"),
                                                        block_labels(tiles.shape[3], block[1], keys, "k"))))
    lazy_role("masked", LazyMaskRole("", source, family, mod, (0, 0) if tiles is None else block, mod_tile),
              Msg("M = {source} where the block mask and mask_mod {mod} allow, -∞ where not", source=source,
                  mod=mod or "—"))
    lazy_role("weights", SoftmaxOp("masked"),
              Msg("A = softmax({source}) over keys (computed by tiles: flex_attention does not return it)",
                  source="masked"))
    found.add(Role("output", own_values, WeightedSumOp("weights", v_name), origin,
                   Msg("O = A·V: what flex_attention returned (largest difference from A·V recomputed here: "
                       "{gap})", gap=f"{gap:.3g}"), ("query", "dim")))
    found.kind = "flex"
    after_output(found, own, "output")
