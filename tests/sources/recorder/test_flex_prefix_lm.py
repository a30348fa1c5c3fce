"""flex_attention with a prefix-LM mask whose prefix differs per sequence of the batch (the mask_mod reads b):
the prefix is seen whole, the rest causally; recorded and checked against a float64 loop per sequence."""

from __future__ import annotations

import pytest
import torch

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

PREFIX = torch.tensor([5, 19])  # the prompt's length in each of the batch's two sequences


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx < PREFIX[b]) | (q_idx >= kv_idx)


def test_each_sequence_has_its_own_prefix() -> None:
    q, k, v = fc.inputs(2, 2, 26, seed=7)
    block_mask = flex.create_block_mask(prefix_lm, 2, None, 26, 26, device="cpu", BLOCK_SIZE=8)
    trace, out = fc.record(q, k, v, block_mask=block_mask)
    prefix = (5, 19)
    ref = fc.expected(q, k, v, 8 ** -0.5, None, lambda b, h, i, j: j < prefix[b] or i >= j)
    fc.assert_matches(trace, out, ref, score_mod=False)
    fc.assert_block_map(trace, block_mask, out)
    first, second = (fc.stage(trace, "weights", b, 1) for b in (0, 1))
    assert first[2, 4] > 0 and first[2, 6] == 0  # sequence 0: position 4 is prompt, 6 is not
    assert second[2, 18] > 0  # sequence 1: the prompt runs to 18
    fc.assert_mask_cell(trace, 0, 1, 2, 6, "prefix_lm")
