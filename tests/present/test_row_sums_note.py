"""The weights' row-sum check: the deviation measured by torch, shown at its scale."""

from __future__ import annotations

import torch

from attn_tui.present.stage_facts import row_sums_note


def _deviation(rows: torch.Tensor) -> float:
    return float((rows.softmax(-1).sum(-1) - 1).abs().max())


def test_the_note_shows_the_measured_deviation_at_its_nearest_power_of_ten() -> None:
    torch.manual_seed(0)
    measured = _deviation(torch.randn(64, 300))  # float32: some rows miss 1 by a bit or two
    assert 0 < measured < 4e-7
    assert row_sums_note(measured, []) == "rows sum to 1 (±1e-07)"
    # One or two lost bits read the same, so the note does not change with the CPU's kernels.
    assert row_sums_note(2.0**-24, []) == row_sums_note(2.0**-23, []) == "rows sum to 1 (±1e-07)"
    assert row_sums_note(3e-3, []) == "rows sum to 1 (±1e-03)"
    assert row_sums_note(0.0, [2]).startswith("rows sum to 1 (±0e+00); rows [2] sum to 0")
