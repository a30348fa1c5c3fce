"""Snapshots of a new exercise starting clean: a note's sample, the reset notice, a kept mask, a typed NaN."""

from __future__ import annotations

import pytest
from textual.widgets import TabbedContent, TextArea

from tests.tui.helpers import sample_app, settle

pytestmark = pytest.mark.slow

SIZE = (100, 32)
NOTE_Q, NOTE_K, NOTE_V = "0 10 0", "10 0 0\n0 10 0\n0 0 10\n0 0 10", "1 0\n10 0\n100 5\n1000 6"  # note 002


async def _type(pilot, q: str, k: str, v: str) -> None:
    app = pilot.app
    app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
    for name, text in (("Q", q), ("K", k), ("V", v)):
        app.query_one(f"#edit-{name}", TextArea).text = text
        await pilot.pause()
    await settle(pilot)


def test_note_002_lookup_sample_on_its_weights(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.editing.load_sample("note_002_lookup")
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(sample_app("korean_padded", mask="causal+padding"), terminal_size=SIZE, run_before=run_before)


def test_typed_matrices_after_a_masked_exercise_start_clean_with_a_notice(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await _type(pilot, NOTE_Q, NOTE_K, NOTE_V)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("weights"))
        await pilot.pause()

    assert snap_compare(sample_app("korean_padded", mask="causal+padding"), terminal_size=SIZE, run_before=run_before)


def test_kept_causal_mask_over_cross_attention_is_flagged(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
        await pilot.pause()
        await pilot.click("#keep-mask")
        await _type(pilot, NOTE_Q, NOTE_K, NOTE_V)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("weights"))
        await pilot.pause()

    assert snap_compare(sample_app("korean", mask="causal"), terminal_size=SIZE, run_before=run_before)


def test_kept_causal_mask_over_cross_attention_in_korean(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
        await pilot.pause()
        await pilot.click("#keep-mask")
        await _type(pilot, NOTE_Q, NOTE_K, NOTE_V)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("weights"))
        pilot.app.query_one("#edit-V", TextArea).blur()
        await pilot.press("t")
        await pilot.pause()

    assert snap_compare(sample_app("korean", mask="causal", temperature=2.0), terminal_size=(120, 40),
                        run_before=run_before)


def test_typed_nan_named_in_the_editor(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await _type(pilot, "0 10 0\n1 nan 0", NOTE_K, NOTE_V)

    assert snap_compare(sample_app("korean"), terminal_size=SIZE, run_before=run_before)
