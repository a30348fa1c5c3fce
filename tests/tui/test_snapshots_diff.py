"""Snapshot of differential attention's key stage: the signed difference map A₁ − λ·A₂ (reviewed by eye)."""

from __future__ import annotations

import pytest

from tests.tui.helpers import sample_app, settle

pytestmark = pytest.mark.slow


async def _on_difference(pilot) -> None:
    await settle(pilot)
    pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("diff_weights"))
    await pilot.press("down", "down", "down", "shift+right")  # a cell the second map pushes below 0
    await pilot.pause()


def test_the_difference_map_is_signed(snap_compare) -> None:
    assert snap_compare(sample_app("diff_korean"), terminal_size=(100, 32), run_before=_on_difference)
