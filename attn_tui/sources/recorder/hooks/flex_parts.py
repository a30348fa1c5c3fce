"""What a recorded flex_attention call's layouts share, whole or by tiles: the user's functions named and run,
the block map, the kernel's mask, and the roles the stages carry.

flex_attention computes softmax(mask(score_mod(Q·Kᵀ·scale))) V in one fused call, so its
inner stages are recomputed the way torch's own reference (`math_attention`) does: in
float32 (float64 stays float64), the user's `score_mod` and `mask_mod` run through four
nested vmaps over (b, h, q_idx, kv_idx). The mask is the kernel's: a tile the BlockMask
skips is -∞, a full tile is computed without the mask_mod, a partial one applies it cell by cell.
"""

from __future__ import annotations

import linecache
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from attn_tui.sources.recorder.found import GivenOp
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.refs import Ref
from attn_tui.sources.recorder.whose import Author, author_of
from attn_tui.trace import ops
from attn_tui.trace.masks import MaskSpec

FLEX_ARGS = ("query", "key", "value", "score_mod", "block_mask", "scale", "enable_gqa")
SKIPPED, PARTIAL, FULL = 0.0, 1.0, 2.0  # a tile of the block map
MAX_LINE = 100  # characters of a function's name or defining line shown


def describe(fn: Callable[..., Any] | None) -> tuple[str, str]:
    """A user function's name and where it is defined ("demo.py:12: def alibi(score, b, h, q, kv):"); masks joined
    by torch's `or_masks`/`and_masks` as "or_masks(causal, document)", where the first of them is defined."""
    while fn is not None and hasattr(fn, "func"):  # functools.partial
        fn = fn.func
    joined = _joined_masks(fn)
    if joined is not None:
        how, parts = joined
        described = [describe(part) for part in parts]
        name = f"{how}_masks({', '.join(n for n, _ in described)})"
        return name[:MAX_LINE], described[0][1] if described else "?"
    name = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or type(fn).__name__
    code = getattr(fn, "__code__", None)
    if code is None and callable(getattr(fn, "forward", None)):  # an nn.Module: its forward
        code = getattr(fn.forward, "__code__", None)  # type: ignore[union-attr]
    if code is None:
        return str(name), "?"
    line = linecache.getline(code.co_filename, code.co_firstlineno).strip()
    line = line if len(line) <= MAX_LINE else line[:MAX_LINE - 1] + "…"
    return str(name)[:MAX_LINE], f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}: {line}"


def _joined_masks(fn: Any) -> tuple[str, tuple[Any, ...]] | None:
    """("or", (causal, document)) for `or_masks(causal, document)`: torch's closure over the masks it joins."""
    code = getattr(fn, "__code__", None)
    closure = getattr(fn, "__closure__", None)
    if code is None or not closure or code.co_name not in ("or_mask", "and_mask") or \
            "mask_mods" not in code.co_freevars or author_of(code.co_filename) is not Author.TORCH:
        return None
    parts = closure[code.co_freevars.index("mask_mods")].cell_contents
    return (code.co_name[:-5], tuple(parts)) if isinstance(parts, (tuple, list)) else None


def short_place(where: str) -> str:
    return where.split(": ", 1)[0]


def _vmapped(fn: Callable[..., Any], with_score: bool) -> Callable[..., Any]:
    """`fn` over every (b, h, q_idx, kv_idx) at once, as flex_attention's own eager reference runs it."""
    from torch.nn.attention.flex_attention import _vmap_for_bhqkv

    return _vmap_for_bhqkv(fn, prefix=(0,) if with_score else ())


def run_user(fn: Callable[..., Any], *args: torch.Tensor, with_score: bool) -> torch.Tensor:
    """Call the user's score_mod or mask_mod on index ranges (and scores), under torch's getitem rule for vmap."""
    from torch._dynamo._trace_wrapped_higher_order_op import TransformGetItemToIndex

    with TransformGetItemToIndex():
        return _vmapped(fn, with_score)(*args)  # type: ignore[no-any-return]


def is_noop(fn: Callable[..., Any] | None, name: str) -> bool:
    from torch.nn.attention import flex_attention as fa

    return fn is None or fn is getattr(fa, name, None)


@dataclass(frozen=True)
class ScoreModRole(GivenOp):
    """The score_mod stage's op, made per slice into a core ScoreMod."""

    source: str
    function: str
    where: str

    def core(self, at: Callable[[str, int | None], ops.Place], n: int, h: int | None, heads: int) -> ops.Op:
        return ops.ScoreMod(at(self.source, h), self.function, self.where, n // heads, n % heads)


@dataclass(frozen=True)
class ModMaskRole(GivenOp):
    """The mask stage's op: the kernel's mask per slice (True = may attend) and the mask_mod's own values."""

    source: str
    allowed: torch.Tensor  # (n, L, S) bool
    mod_values: torch.Tensor | None  # (n, L, S) bool, what the mask_mod returned
    mod: str
    block: tuple[int, int]

    def core(self, at: Callable[[str, int | None], ops.Place], n: int, h: int | None, heads: int) -> ops.Op:
        allowed = self.allowed[n]
        spec = None if bool(allowed.all()) else MaskSpec(
            (int(allowed.shape[0]), int(allowed.shape[1])), dense=allowed,
            code_mask=None if self.mod_values is None else self.mod_values[n], code_rule="mask_mod", code_fill="-inf",
            mod=self.mod, mod_at=(n // heads, n % heads, *self.block))
        return ops.Masking(at(self.source, h), spec, "-inf")


@dataclass(frozen=True)
class BlockMapRole(GivenOp):
    block: tuple[int, int]
    shape: tuple[int, int]
    mod: str

    def core(self, at: Callable[[str, int | None], ops.Place], n: int, h: int | None, heads: int) -> ops.Op:
        return ops.BlockTiles(self.block, self.shape, self.mod)


def arguments(node: Node) -> dict[str, Any]:
    out = dict(zip(FLEX_ARGS, node.inputs))
    out.update({k: v for k, v in node.kwargs.items() if k in FLEX_ARGS})
    return out


def value_of(arg: Any) -> Any:
    return arg.value if isinstance(arg, Node) else arg


def block_map(block_mask: Any, batch: int, heads: int, length: int, keys: int) -> torch.Tensor:
    """(batch, heads, query blocks, key blocks): SKIPPED, PARTIAL or FULL, from the BlockMask's own indices."""
    q_block, kv_block = block_mask.BLOCK_SIZE
    rows, cols = -(-length // q_block), -(-keys // kv_block)
    tiles = torch.full((batch, heads, rows, cols), SKIPPED)

    def put(counts: torch.Tensor | None, indices: torch.Tensor | None, value: float) -> None:
        if counts is None or indices is None:
            return
        counts = counts.cpu().long().expand(batch, heads, -1)[..., :rows]  # (B, H, rows)
        indices = indices.cpu().long().expand(batch, heads, -1, -1)[..., :rows, :]  # (B, H, rows, slots)
        used = (torch.arange(indices.shape[-1]) < counts[..., None]) & (indices >= 0) & (indices < cols)
        place = torch.where(used, indices, cols)  # (B, H, rows, slots): unused slots go to a spare column
        hit = torch.zeros(batch, heads, rows, cols + 1, dtype=torch.bool).scatter_(-1, place, True)
        tiles[hit[..., :cols]] = value

    put(block_mask.kv_num_blocks, block_mask.kv_indices, PARTIAL)
    put(block_mask.full_kv_num_blocks, block_mask.full_kv_indices, FULL)
    return tiles


def kernel_mask(tiles: torch.Tensor, mod_values: torch.Tensor | None, block: tuple[int, int],
                rows: slice, cols: slice) -> torch.Tensor:
    """(B, H, rows, cols) True where the kernel attends: a full tile, or a partial tile where the mask_mod is True."""
    r0, r1 = rows.start, rows.stop
    c0, c1 = cols.start, cols.stop
    tile = tiles[:, :, torch.arange(r0, r1) // block[0]][..., torch.arange(c0, c1) // block[1]]  # (B, H, rows, cols)
    partial = tile == PARTIAL
    if mod_values is not None:
        partial = partial & mod_values.to(partial.device)
    return (tile == FULL) | partial


def flat(t: torch.Tensor) -> torch.Tensor:
    """(B, H, …) → (n, …) with n = b * H + h."""
    return t.reshape(t.shape[0] * t.shape[1], *t.shape[2:])


def flat_ref(ref: Ref) -> Ref:
    return Ref(ref.node, ref.base, flat(ref.index))


def block_labels(count: int, size: int, total: int, prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{b * size}–{min((b + 1) * size, total) - 1}" for b in range(count))
