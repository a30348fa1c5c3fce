"""What a recording holds, as `trace --max-memory` counts it: the calls kept alive, and an SDPA call laid out."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.held import LAID_OUT, laid_out_bytes


def test_kept_bytes_follow_the_calls_kept() -> None:
    """Each kept call holds its scores and its weights (4·32·32 float32 each); a dropped call no longer counts."""
    with attn_tui.record(max_calls=2) as rec:
        rec.recorder.budget = 1 << 40
        for _ in range(5):
            scores = torch.randn(4, 32, 32)
            torch.softmax(scores, dim=-1)
    assert rec.recorder.kept_bytes == 2 * (2 * 4 * 32 * 32 * 4)


def test_over_budget_is_called_the_moment_the_kept_calls_pass_it() -> None:
    passed: list[tuple[int, int]] = []
    with attn_tui.record() as rec:
        rec.recorder.budget = 3 * 2 * (2 * 64 * 64 * 4)  # room for three calls of scores and weights
        rec.recorder.over_budget = lambda kept, budget: passed.append((kept, budget))
        for _ in range(4):
            torch.softmax(torch.randn(2, 64, 64), dim=-1)
    assert passed == [(4 * 2 * (2 * 64 * 64 * 4), 3 * 2 * (2 * 64 * 64 * 4))]


def test_laid_out_bytes_bound_the_stages_an_sdpa_call_becomes() -> None:
    """The estimate is made before the layout; the layout's (L, S) stages, each storage once, stay within it."""
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 16, 8), torch.randn(2, 3, 12, 8)
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, k, k, attn_mask=torch.rand(16, 12) > 0.3)
    (node,) = next(iter(rec.recorder.anchors.values()))
    estimate = laid_out_bytes(node)
    assert estimate == LAID_OUT * 2 * 3 * 16 * 12 * 4
    storages = {}
    for stage in rec.trace:
        if stage.name in ("scores", "scaled", "masked", "weights"):
            storage = stage.tensor.untyped_storage()
            storages[storage.data_ptr()] = storage.nbytes()
    assert len(storages) >= 3 and 3 * 2 * 3 * 16 * 12 * 4 <= sum(storages.values()) <= estimate
