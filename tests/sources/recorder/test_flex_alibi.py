"""flex_attention with ALiBi (a linear bias by distance, one slope per head: 2^(-8(h+1)/H) for H heads), causal,
recorded and checked against a float64 loop of the paper's formula."""

from __future__ import annotations

import pytest
import torch

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

HEADS = 8
SLOPES = torch.tensor([2 ** (-8 * (h + 1) / HEADS) for h in range(HEADS)])


def alibi(score, b, h, q_idx, kv_idx):
    return score + SLOPES[h] * (kv_idx - q_idx)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def ref_score(score: float, b: int, h: int, i: int, j: int) -> float:
    slope = 2.0 ** (-8.0 * (h + 1) / HEADS)  # float64, not the float32 table the mod reads
    return score - slope * (i - j)


def test_every_heads_slope_matches_a_float64_loop_of_the_formula() -> None:
    q, k, v = fc.inputs(1, HEADS, 24, seed=3)
    block_mask = flex.create_block_mask(causal, None, None, 24, 24, device="cpu", BLOCK_SIZE=8)
    trace, out = fc.record(q, k, v, score_mod=alibi, block_mask=block_mask)
    ref = fc.expected(q, k, v, 8 ** -0.5, ref_score, lambda b, h, i, j: i >= j)
    fc.assert_matches(trace, out, ref, score_mod=True)
    fc.assert_block_map(trace, block_mask, out)
    for h in (0, 7):  # the steepest and the flattest slope
        fc.assert_score_cell(trace, 0, h, 19, 2, ref_score, alibi)
    bias_far = fc.stage(trace, "score_mod", 0, 0)[23, 0] - fc.stage(trace, "scaled", 0, 0)[23, 0]
    assert float(bias_far) == pytest.approx(-0.5 * 23, abs=1e-5)  # head 0: slope 1/2, 23 positions back
