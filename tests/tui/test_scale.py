"""A keypress costs what is visible: a cursor move rebuilds the lines it changed, a stage change reads visible tiles."""

from __future__ import annotations

import pytest

from attn_tui.core.samples import load_samples
from attn_tui.core.settings import Request, SentenceInput
from attn_tui.present.grid import TiledCells
from tests.tui.helpers import RecordingApp, sample_app, settle


def _long_app(tokens: int) -> RecordingApp:
    text = " ".join(f"w{i % 97}" for i in range(tokens))
    return RecordingApp(Request(SentenceInput(text), load_samples()["korean"].request.settings))


async def test_a_cursor_move_rebuilds_only_the_lines_it_changed() -> None:
    app = sample_app("lookup")
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        heatmap = app.explorer.heatmap
        await pilot.pause()
        before = heatmap.lines_built
        await pilot.press("down")
        await pilot.pause()
        assert heatmap.lines_built - before <= 3  # the line it left, the line it entered, the column labels
        before = heatmap.lines_built
        await pilot.press("shift+right")
        await pilot.pause()
        assert heatmap.lines_built - before <= 2  # the same line, and the labels


@pytest.mark.slow
async def test_stage_and_cursor_keys_read_only_visible_tiles_at_4096_tokens() -> None:
    app = _long_app(4096)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.trace.lazy
        for key in ("right", "left", "down", "shift+right", "end"):
            await pilot.press(key)
            await pilot.pause()
            cells = app.view.grid.source
            if isinstance(cells, TiledCells):
                assert cells.fetched <= 4, (key, app.view.name, cells.fetched)  # a screen, not 4096 rows
        assert "✓ matches" in str(app.query_one("#inspector").render())
