"""flex_attention with a causal mask_mod: a length that is not a multiple of the block, and a chunk of queries
at the end of a longer key sequence (the offset a cache gives), recorded and checked against float64 loops; the
block map against BlockMask's own tiles."""

from __future__ import annotations

import pytest

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

OFFSET = 28  # 12 new queries after 28 cached keys: 40 keys in all


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def causal_after_cache(b, h, q_idx, kv_idx):
    return q_idx + OFFSET >= kv_idx


def test_a_causal_call_of_37_tokens_in_blocks_of_16() -> None:
    q, k, v = fc.inputs(2, 2, 37, seed=1)
    block_mask = flex.create_block_mask(causal, 2, 2, 37, 37, device="cpu", BLOCK_SIZE=16)
    trace, out = fc.record(q, k, v, block_mask=block_mask)
    fc.assert_matches(trace, out, fc.expected(q, k, v, 8 ** -0.5, None, lambda b, h, i, j: i >= j), score_mod=False)
    full, partial, skipped = fc.assert_block_map(trace, block_mask, out)
    assert skipped == 2 * 2 * 3 and full + partial == 2 * 2 * 6  # 3 × 3 tiles: those above the diagonal skipped
    fc.assert_mask_cell(trace, 1, 0, 20, 30, "causal")
    fc.assert_mask_cell(trace, 0, 1, 3, 36, "causal")  # in a tile the kernel skips


def test_queries_at_the_end_of_a_longer_key_sequence() -> None:
    q, k, v = fc.inputs(1, 2, 12, keys=40, seed=2)
    block_mask = flex.create_block_mask(causal_after_cache, None, None, 12, 40, device="cpu", BLOCK_SIZE=8)
    trace, out = fc.record(q, k, v, block_mask=block_mask)
    ref = fc.expected(q, k, v, 8 ** -0.5, None, lambda b, h, i, j: i + OFFSET >= j)
    fc.assert_matches(trace, out, ref, score_mod=False)
    assert fc.stage(trace, "weights", 0, 0).shape == (12, 40)
    fc.assert_block_map(trace, block_mask, out)
    fc.assert_mask_cell(trace, 0, 1, 0, 35, "causal_after_cache")
