"""Differential attention on a long input: both maps and their difference read by tiles, never held whole.

    for each block of query rows:   A1, A2 = softmax(M1), softmax(M2);  O[rows] = (A1 − λ·A2)·V

The same arithmetic as `maps.record_maps` and `maps.record_difference`, streamed as `attend.stream` streams one
map: one pass over blocks of rows keeps each map's log-sum-exp per row, the outputs and every stage's stats,
and afterwards any tile of scores_n … weights_n or of diff_weights is recomputed on demand from q, k and the
two log-sum-exps (weights_n = exp(masked_n − lse_n)).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from attn_tui.attention.attend import Tail, pass_rows, softmax_rows, warn_empty_rows
from attn_tui.attention.variants.diff import LambdaTerms
from attn_tui.attention.variants.diff.maps import MAPS, Halves, map_stages, map_tiles, record_heads
from attn_tui.trace import masks
from attn_tui.trace.lazy import LazyTensor, ScoreTiles
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Stage, Trace
from attn_tui.trace.values import StageStats, fold_heads, fold_row_sums


@dataclass(eq=False)
class DiffTiles(ScoreTiles):
    """Both maps of every head for any tile, and D = A1 − λ·A2; `last` is the stage each mask reads (scaled or
    capped, suffixed _1 and _2), `lse` map 1's log-sum-exp per row and `lse_2` map 2's."""

    lam: float = 0.0
    lse_2: torch.Tensor | None = None  # (heads, L)

    def tiles(self, rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        """Every stage of both maps on rows × cols, and their difference: (heads, rows, cols) each."""
        tiles = dict(self.pre(rows, cols))
        for n, lse in ((1, self.lse), (2, self.lse_2)):
            assert lse is not None, "the streaming pass has not run"
            masked = self.masked(tiles[f"{self.last}_{n}"], rows, cols)
            row_lse = lse[:, rows].to(masked.device)[..., None]  # (heads, rows, 1)
            tiles[f"masked_{n}"] = masked
            tiles[f"weights_{n}"] = torch.exp(masked - row_lse).masked_fill(torch.isneginf(row_lse), 0.0)
        tiles["diff_weights"] = tiles["weights_1"] - self.lam * tiles["weights_2"]
        return tiles

    def tile(self, name: str, rows: slice, cols: slice, keep: bool = True) -> torch.Tensor:
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        key = (r0, r1, c0, c1)
        found = self._cache.get(key)
        if found is None:
            found = self.tiles(slice(r0, r1), slice(c0, c1))
            if keep:
                self._keep(key, found)
        else:
            self._cache.move_to_end(key)
        return found[name]


def stream(trace: Trace, tail: Tail, tiles: DiffTiles, pre_names: Sequence[str], values: torch.Tensor,
           at: Sequence[Place]) -> torch.Tensor:
    """One pass over blocks of query rows: D·V (heads, L, 2d), both maps' log-sum-exp, every stage's stats."""
    rows_total, keys = tiles.shape
    heads = len(at)
    dtype = masks.softmax_dtype(values.dtype)
    output = torch.empty(heads, rows_total, values.shape[-1], dtype=values.dtype, device=values.device)
    lse = {n: torch.empty(heads, rows_total, dtype=dtype, device=values.device) for n in MAPS}
    names = [*pre_names, *(f"{kind}_{n}" for n in MAPS for kind in ("masked", "weights")), "diff_weights"]
    stats = {name: [StageStats() for _ in range(heads)] for name in names}
    step = pass_rows(values.device, heads, keys)
    for start in range(0, rows_total, step):
        rows = slice(start, min(rows_total, start + step))
        pre = tiles.pre(rows, slice(None))
        kept = None if tiles.mask is None else tiles.mask.tile(rows, slice(None))
        maps = []
        for n in MAPS:
            masked = tiles.masked(pre[f"{tiles.last}_{n}"], rows, slice(None))  # (heads, b, S)
            bottom = masked.amin(dim=-1)  # (heads, b)
            weights, lse[n][:, rows], top, shift, total, empty = softmax_rows(masked)
            fold_heads(stats[f"masked_{n}"], masked, kept, (bottom, top))
            fold_heads(stats[f"weights_{n}"], weights, kept,
                       (torch.exp(bottom - shift) / total, torch.exp(top - shift) / total))
            fold_row_sums(stats[f"weights_{n}"], weights, start, empty)
            maps.append(weights)
        diff = maps[0] - tiles.lam * maps[1]  # (heads, b, S)
        output[:, rows] = diff.to(values.dtype) @ values
        fold_heads(stats["diff_weights"], diff)
        for name in pre_names:
            fold_heads(stats[name], pre[name])
    tiles.lse, tiles.lse_2 = lse[1], lse[2]
    for h, place in enumerate(at):
        for name in names:
            trace.stats[place.at(name)] = stats[name][h]
    warn_empty_rows(trace, tail)
    return output


def record_lazy(trace: Trace, tail: Tail, halves: Halves, at: list[Place], factor: float, cap: float | None,
                lam: torch.Tensor, op: LambdaTerms, values: torch.Tensor, value_at: list[Place]) -> torch.Tensor:
    """Both maps' stages (lazy), then lambda, diff_weights (lazy), diff_output and head_norm, in the whole path's
    order; returns head_norm (heads, L, 2d)."""
    shape = (len(tail.query_axis.labels), len(tail.key_axis.labels))

    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        return map_tiles(halves, factor, cap, rows, cols)

    tiles = DiffTiles(pre, "scaled" if cap is None else "capped", shape, tail.mask, tail.fill, tail.temperature,
                        lam=float(lam[0, 3]))
    stages = {n: map_stages(tail, halves, n, factor, cap) for n in MAPS}
    pre_names = [stage.name for n in MAPS for stage in stages[n][:-2]]  # scores_n, scaled_n, capped_n
    output = stream(trace, tail, tiles, pre_names, values, at)
    sample = tiles.tiles(slice(0, 1), slice(0, 1))  # one cell tells each stage's dtype
    for n in MAPS:
        for h, place in enumerate(at):
            for stage in stages[n]:
                tile = sample[stage.name]
                trace.put(Stage(place.at(stage.name), LazyTensor(tiles, stage.name, h, shape,
                                                                 tile.dtype, tile.device),
                                stage.formula, stage.axes, stage.op(place)))
    diff = [LazyTensor(tiles, "diff_weights", h, shape, sample["diff_weights"].dtype, values.device)
            for h in range(len(at))]
    return record_heads(trace, tail, at, [(p.at("weights_1"), p.at("weights_2")) for p in at], lam, op, list(diff),
                        output, value_at)

