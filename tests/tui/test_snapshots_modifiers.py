"""Snapshots of the 2025 options' key stages: a soft cap, and compare with the gate off (reviewed by eye)."""

from __future__ import annotations

import pytest

from tests.tui.helpers import sample_app, settle
from tests.tui.test_compare import _compare

pytestmark = pytest.mark.slow


def _at(name: str, compare: str | None = None):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index(name))
        await pilot.pause()
        if compare is not None:
            await _compare(pilot, compare)
        await pilot.pause()

    return run_before


def test_capped_stage(snap_compare) -> None:
    assert snap_compare(sample_app("softcap_english"), terminal_size=(100, 32), run_before=_at("capped"))


def test_compare_gate_off_beside_the_gated_sink(snap_compare) -> None:
    assert snap_compare(sample_app("gate_sink_english"), terminal_size=(130, 40), run_before=_at("gated", "gate"))
