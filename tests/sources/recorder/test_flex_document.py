"""flex_attention over packed documents (several texts in one sequence, each attending causally within itself:
the mask_mod reads a document id per position), recorded and checked against a float64 loop."""

from __future__ import annotations

import pytest
import torch

from tests.sources.recorder import flex_check as fc

flex = pytest.importorskip("torch.nn.attention.flex_attention")

LENGTHS = [9, 14, 6, 11]
DOC = torch.repeat_interleave(torch.arange(len(LENGTHS)), torch.tensor(LENGTHS))  # document of each position


def same_document_causal(b, h, q_idx, kv_idx):
    return (DOC[q_idx] == DOC[kv_idx]) & (q_idx >= kv_idx)


def test_no_position_attends_across_a_document_boundary() -> None:
    length = sum(LENGTHS)
    q, k, v = fc.inputs(1, 2, length, seed=9)
    block_mask = flex.create_block_mask(same_document_causal, None, None, length, length, device="cpu",
                                        BLOCK_SIZE=8)
    trace, out = fc.record(q, k, v, block_mask=block_mask)
    starts = [sum(LENGTHS[:n]) for n in range(len(LENGTHS))]
    doc = [n for n, size in enumerate(LENGTHS) for _ in range(size)]
    ref = fc.expected(q, k, v, 8 ** -0.5, None, lambda b, h, i, j: doc[i] == doc[j] and i >= j)
    fc.assert_matches(trace, out, ref, score_mod=False)
    fc.assert_block_map(trace, block_mask, out)
    weights = fc.stage(trace, "weights", 0, 1)
    for start in starts:
        assert weights[start, start] == 1  # each document's first token sees only itself
    fc.assert_mask_cell(trace, 0, 0, starts[1], starts[1] - 1, "same_document_causal")  # just across the boundary
