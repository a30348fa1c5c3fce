"""Snapshots of the model pane's states and the ways to move (reviewed by eye before being accepted): a switch
that is on, a recorded program's rows, the stage picker on a long bar, and the palette's setting commands."""

from __future__ import annotations

import pytest

from attn_tui.ask.settings import RecordAsk
from attn_tui.sources.recorder.script import sample_script
from attn_tui.sources.recorder.supervise import run_script
from tests.tui.helpers import RecordingApp, sample_app, searched, settle

pytestmark = pytest.mark.slow


def _then(*keys: str, typed: str = ""):
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press(*keys)
        await pilot.pause()
        if typed:
            await pilot.press(*typed)
            await searched(pilot)
            focused = pilot.app.focused
            if focused is not None and hasattr(focused, "cursor_blink"):
                focused.cursor_blink = False  # the cursor drawn steadily: a blink's phase is no part of the picture
        await pilot.pause()

    return run_before


def test_a_switch_on_in_korean(snap_compare) -> None:
    app = sample_app("korean", positional=True)
    assert snap_compare(app, terminal_size=(100, 44), run_before=_then("t"))


@pytest.mark.parametrize("script", ["self_attention", "bahdanau_decoder"])
def test_a_recorded_program_in_the_model_pane(snap_compare, script: str) -> None:
    recorded = run_script(sample_script(script), quiet_stdout=True).trace  # as `attn-tui trace` runs it
    assert snap_compare(RecordingApp(record=RecordAsk().keeping(recorded)), terminal_size=(120, 36), run_before=_then())


def test_the_stage_picker_on_flash_tiles(snap_compare) -> None:
    assert snap_compare(sample_app("flash_tiles"), terminal_size=(110, 34), run_before=_then("slash", typed="tile 1"))


def test_the_palette_offers_the_settings(snap_compare) -> None:
    assert snap_compare(sample_app("korean"), terminal_size=(110, 34), run_before=_then("ctrl+p", typed="set mask"))
