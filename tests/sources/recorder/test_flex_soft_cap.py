"""flex_attention with a soft cap on the scores (as Gemma 2 writes it: cap · tanh(score / cap)), causal, recorded
and checked against a float64 loop; the cap bites on these inputs, and the inspector reruns the user's function."""

from __future__ import annotations

import math

import pytest
import torch

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

CAP = 5.0


def soft_cap(score, b, h, q_idx, kv_idx):
    return CAP * torch.tanh(score / CAP)


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def ref_score(score: float, b: int, h: int, i: int, j: int) -> float:
    return CAP * math.tanh(score / CAP)


def test_the_capped_scores_weights_and_output_match_a_float64_loop() -> None:
    q, k, v = fc.inputs(2, 2, 29, spread=2.5)  # large scores: the cap changes them
    block_mask = flex.create_block_mask(causal, None, None, 29, 29, device="cpu", BLOCK_SIZE=8)
    trace, out = fc.record(q, k, v, score_mod=soft_cap, block_mask=block_mask)
    ref = fc.expected(q, k, v, 8 ** -0.5, ref_score, lambda b, h, i, j: i >= j)
    fc.assert_matches(trace, out, ref, score_mod=True)
    scaled = fc.stage(trace, "scaled", 1, 1)
    capped = fc.stage(trace, "score_mod", 1, 1)
    assert scaled.abs().max() > CAP > capped.abs().max()  # the cap bites, and holds
    fc.assert_block_map(trace, block_mask, out)
    fc.assert_score_cell(trace, 1, 0, 20, 3, ref_score, soft_cap)
    fc.assert_mask_cell(trace, 0, 1, 4, 11, "causal")
