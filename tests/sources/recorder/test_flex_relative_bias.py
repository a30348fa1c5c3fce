"""flex_attention with T5's bucketed relative position bias (a learned number per head and distance bucket:
exact buckets for near keys, log-spaced ones up to a maximum distance, either side of the query), recorded and
checked against a float64 loop that buckets each distance by the formula in plain Python."""

from __future__ import annotations

import math

import pytest
import torch

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

BUCKETS, MAX_DISTANCE, HEADS = 8, 20, 3
TABLE = torch.randn(BUCKETS, HEADS, generator=torch.Generator().manual_seed(11))  # (bucket, head): learned


def bucket_of(relative):
    """T5's bidirectional bucket of kv − q, on index tensors (what the score_mod calls)."""
    half = BUCKETS // 2
    side = (relative > 0).to(torch.long) * half
    distance = relative.abs()
    exact = half // 2
    far = exact + (torch.log(distance.clamp(min=1).to(torch.float32) / exact) / math.log(MAX_DISTANCE / exact)
                   * (half - exact)).to(torch.long)
    return side + torch.where(distance < exact, distance, far.clamp(max=half - 1))


def relative_bias(score, b, h, q_idx, kv_idx):
    return score + TABLE[bucket_of(kv_idx - q_idx), h]


def ref_bucket(relative: int) -> int:
    half = BUCKETS // 2
    exact = half // 2
    distance = abs(relative)
    if distance < exact:
        inside = distance
    else:
        steps = math.log(distance / exact) / math.log(MAX_DISTANCE / exact) * (half - exact)
        inside = min(half - 1, exact + int(steps))
    return (half if relative > 0 else 0) + inside


def ref_score(score: float, b: int, h: int, i: int, j: int) -> float:
    return score + float(TABLE[ref_bucket(j - i), h])


def test_the_bucketed_bias_matches_a_float64_loop_and_uses_every_bucket_a_distance_can_fall_in() -> None:
    q, k, v = fc.inputs(2, HEADS, 40, seed=5)
    trace, out = fc.record(q, k, v, score_mod=relative_bias)
    ref = fc.expected(q, k, v, 8 ** -0.5, ref_score, None)
    fc.assert_matches(trace, out, ref, score_mod=True)
    used = {ref_bucket(j - i) for i in range(40) for j in range(40)}
    assert used == set(range(BUCKETS)) - {BUCKETS // 2}  # every bucket but "after, at distance 0"
    fc.assert_score_cell(trace, 1, 2, 3, 38, ref_score, relative_bias)
    fc.assert_score_cell(trace, 0, 1, 30, 29, ref_score, relative_bias)
