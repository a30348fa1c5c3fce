"""What each flex_attention mod's own test module checks, given the call and a float64 reference by plain loops.

A module writes its score_mod or mask_mod the way a user's code would (torch ops on the index tensors) and the
same rule again as plain Python arithmetic on one cell (`ref_score`, `ref_allowed`); `expected` builds the
dense float64 stages from those by loops, so the reference shares no code with the mod it checks.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import attn_tui
from attn_tui.explain.cell import explain
from attn_tui.trace.stage import Trace

RefScore = Callable[[float, int, int, int, int], float]  # (scaled score, b, h, q, kv) → after the score_mod
RefAllowed = Callable[[int, int, int, int], bool]  # (b, h, q, kv) → may the query attend


def inputs(b: int, h: int, length: int, keys: int | None = None, d: int = 8, seed: int = 0, spread: float = 1.0
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, h, length, d, generator=g) * spread
    k, v = (torch.randn(b, h, keys or length, d, generator=g) * spread for _ in range(2))
    return q, k, v


def record(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, **call: Any) -> tuple[Trace, torch.Tensor]:
    """The call as the user's code makes it, recorded; its own output."""
    from torch.nn.attention.flex_attention import flex_attention

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="flex_attention called without torch.compile")
        with attn_tui.record() as rec:
            out = flex_attention(q, k, v, **call)
    assert rec.recorder.failed is None
    return rec.trace, out


def stage(trace: Trace, name: str, b: int, h: int) -> torch.Tensor:
    found = trace.stage(name, head=h, step=b)
    return found.data[:, :] if found.lazy else found.tensor


def expected(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, ref_score: RefScore | None,
             ref_allowed: RefAllowed | None) -> dict[str, torch.Tensor]:
    """(B, H, L, S) float64 stages, each cell's mod and mask by the module's plain-Python rule."""
    scaled = (q.double() @ k.double().transpose(-2, -1)) * scale
    modded = scaled.clone()
    allowed = torch.ones(scaled.shape, dtype=torch.bool)
    batch, heads, length, keys = scaled.shape
    for b in range(batch):
        for h in range(heads):
            for i in range(length):
                for j in range(keys):
                    if ref_score is not None:
                        modded[b, h, i, j] = ref_score(float(scaled[b, h, i, j]), b, h, i, j)
                    if ref_allowed is not None:
                        allowed[b, h, i, j] = ref_allowed(b, h, i, j)
    masked = modded.masked_fill(~allowed, -math.inf)
    weights = torch.softmax(masked, dim=-1)
    return {"scaled": scaled, "score_mod": modded, "allowed": allowed, "weights": weights,
            "output": weights @ v.double()}


def assert_matches(trace: Trace, out: torch.Tensor, ref: dict[str, torch.Tensor], score_mod: bool) -> None:
    """Every (batch, head): scaled, score_mod, the mask, weights against the reference; the output the call's own."""
    batch, heads = out.shape[:2]
    names = {s.name for s in trace}
    assert ("score_mod" in names) == score_mod
    for b in range(batch):
        for h in range(heads):
            for name in ("scaled", "score_mod") if score_mod else ("scaled",):
                torch.testing.assert_close(stage(trace, name, b, h).double(), ref[name][b, h], atol=1e-5, rtol=0)
            if "masked" in names:
                assert torch.equal(~torch.isneginf(stage(trace, "masked", b, h)), ref["allowed"][b, h])
            torch.testing.assert_close(stage(trace, "weights", b, h).double(), ref["weights"][b, h], atol=1e-5,
                                       rtol=0)
            assert torch.equal(stage(trace, "output", b, h), out[b, h])  # the call's own output, bit for bit
            torch.testing.assert_close(out[b, h].double(), ref["output"][b, h], atol=1e-5, rtol=0)


def assert_block_map(trace: Trace, block_mask: Any, out: torch.Tensor) -> tuple[int, int, int]:
    """Each (batch, head)'s tile map holds BlockMask's own partial and full tiles (a mask made for one batch or
    head serves them all), the rest skipped; the formula counts them over the call's batches and heads. Returns
    the call's (full, partial, skipped)."""
    batch, heads = out.shape[:2]
    totals = [0, 0, 0]
    for b in range(batch):
        for h in range(heads):
            tiles = stage(trace, "block_map", b, h)  # (q blocks, kv blocks): 0 skipped, 1 partial, 2 full
            mb, mh = min(b, block_mask.kv_num_blocks.shape[0] - 1), min(h, block_mask.kv_num_blocks.shape[1] - 1)
            for row in range(tiles.shape[0]):
                partial = block_mask.kv_indices[mb, mh, row, : block_mask.kv_num_blocks[mb, mh, row]].tolist()
                full = block_mask.full_kv_indices[mb, mh, row, : block_mask.full_kv_num_blocks[mb, mh, row]].tolist()
                assert sorted(torch.nonzero(tiles[row] == 1).flatten().tolist()) == sorted(partial)
                assert sorted(torch.nonzero(tiles[row] == 2).flatten().tolist()) == sorted(full)
            for n, value in enumerate((2, 1, 0)):
                totals[n] += int((tiles == value).sum())
    full, partial, skipped = totals
    formula = str(trace.stage("block_map", head=0, step=0).formula)
    assert f"{full} full, {partial} partial, {skipped} skipped" in formula, formula
    return full, partial, skipped


def assert_score_cell(trace: Trace, b: int, h: int, i: int, j: int, ref_score: RefScore,
                      score_mod: Callable[..., Any]) -> None:
    """The inspector runs the user's score_mod on the cell's indices, names its file, line and def, and gets the
    reference."""
    code = score_mod.__code__
    source = f"{Path(code.co_filename).name}:{code.co_firstlineno}: def {score_mod.__name__}("
    found = trace.stage("score_mod", head=h, step=b)
    arithmetic = explain(trace, found.place, (i, j))
    assert arithmetic.matches
    text = "\n".join([arithmetic.title, *arithmetic.lines])
    assert source in text and f"b = {b}, h = {h}, q_idx = {i}, kv_idx = {j}" in text, text
    scaled = float(stage(trace, "scaled", b, h)[i, j])
    assert arithmetic.total == ref_score(scaled, b, h, i, j) or math.isclose(
        arithmetic.total, ref_score(scaled, b, h, i, j), abs_tol=1e-5)


def assert_mask_cell(trace: Trace, b: int, h: int, i: int, j: int, mask_name: str) -> None:
    """A blocked cell of `masked` names the mask_mod that was False there (or the tile the kernel skipped)."""
    found = trace.stage("masked", head=h, step=b)
    arithmetic = explain(trace, found.place, (i, j))
    assert arithmetic.matches
    text = "\n".join(arithmetic.lines)
    assert f"mask_mod {mask_name} (" in text or "never computes" in text, text
