"""Snapshots of the mask conventions: typed 1 = blocked, in English and Korean, and a traced program's own mask."""

from __future__ import annotations

import pytest

from attn_tui.ask.settings import RecordAsk
from tests.tui.helpers import RecordingApp, sample_app, settle
from tests.tui.test_mask_conventions import recorded_note

pytestmark = pytest.mark.slow

PAD_CELL = ("shift+right", "shift+right", "shift+right")  # (0, 3): the <pad> key


def _masked_at_pad(*extra: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("masked"))
        await pilot.press(*PAD_CELL, *extra)
        await settle(pilot)

    return run_before


def test_a_mask_typed_one_means_padding(snap_compare) -> None:
    assert snap_compare(sample_app("luong_padding_note"), terminal_size=(120, 36), run_before=_masked_at_pad())


def test_a_mask_typed_one_means_padding_in_korean(snap_compare) -> None:
    assert snap_compare(sample_app("luong_padding_note"), terminal_size=(120, 36), run_before=_masked_at_pad("t"))


def test_a_traced_programs_own_mask(snap_compare) -> None:
    assert snap_compare(RecordingApp(record=RecordAsk().keeping(recorded_note())), terminal_size=(120, 36),
                        run_before=_masked_at_pad())
