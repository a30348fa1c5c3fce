"""flex_attention with a causal sliding window (each query sees itself and the 8 keys before it), recorded and
checked against a float64 loop; the block map has tiles skipped on both sides of the band, partial and full ones."""

from __future__ import annotations

import pytest

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

WINDOW = 9


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW)


def test_the_band_matches_a_float64_loop_and_the_block_map_its_block_mask() -> None:
    q, k, v = fc.inputs(1, 3, 45, seed=4)
    block_mask = flex.create_block_mask(sliding_window, 1, 3, 45, 45, device="cpu", BLOCK_SIZE=4)
    trace, out = fc.record(q, k, v, block_mask=block_mask)
    ref = fc.expected(q, k, v, 8 ** -0.5, None, lambda b, h, i, j: 0 <= i - j < WINDOW)
    fc.assert_matches(trace, out, ref, score_mod=False)
    full, partial, skipped = fc.assert_block_map(trace, block_mask, out)
    assert full > 0 and partial > 0 and skipped > full + partial  # a narrow band: most tiles never computed
    tiles = fc.stage(trace, "block_map", 0, 2)
    assert tiles[11, 0] == 0 and tiles[11, 11] == 1  # far behind the window: skipped; the diagonal: partial
    fc.assert_mask_cell(trace, 0, 2, 30, 21, "sliding_window")  # just past the window, inside a computed tile
    fc.assert_mask_cell(trace, 0, 0, 44, 1, "sliding_window")  # far back: a skipped tile
