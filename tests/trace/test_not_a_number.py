"""A row of weights that is NaN is never said to sum to 1, and a forward pass that went NaN says where it did."""

from __future__ import annotations

import math

import torch

from attn_tui.present.stage_facts import row_sums_note
from attn_tui.trace.stage_stats import StageStats, worse


def test_a_nan_row_makes_the_deviation_nan_whichever_block_came_first() -> None:
    weights = torch.tensor([[0.5, 0.5], [math.nan, 0.5]])
    for blocks in ((weights[:1], weights[1:]), (weights[1:], weights[:1])):
        stats = StageStats()
        for block in blocks:
            stats.add_row_sums(block, 0, torch.zeros(1, dtype=torch.bool))
        assert math.isnan(stats.row_deviation)
    assert math.isnan(worse(0.1, math.nan)) and math.isnan(worse(math.nan, 0.1)) and worse(0.1, 0.2) == 0.2


def test_the_note_says_nan_rows_do_not_sum_to_1() -> None:
    assert row_sums_note(math.nan, []) == "rows hold NaN: they do not sum to 1"
    assert row_sums_note(6e-8, []) == "rows sum to 1 (±1e-07)"
