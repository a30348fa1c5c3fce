"""A keypress costs what is visible: a cursor move rebuilds the lines it changed, a stage change reads visible tiles."""

from __future__ import annotations

import pytest

from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import SentenceInput, VariantAsk
from attn_tui.present.grid import TiledCells
from tests.tui.helpers import RecordingApp, sample_app, settle


def _long_app(tokens: int) -> RecordingApp:
    text = " ".join(f"w{i % 97}" for i in range(tokens))
    return RecordingApp(VariantAsk(SentenceInput(text), load_samples()["korean"].request.settings))


@pytest.mark.slow
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


@pytest.mark.slow
async def test_a_stage_change_paints_the_heatmap_once_when_its_scrollbars_change(monkeypatch) -> None:
    """weights (300 × 300) needs both scrollbars, output (300 × d) only one: the heatmap is laid out and
    painted on the key's frame, not again on the next when Textual's layout pass finds the scrollbars
    changed (a frame later for every such key)."""
    from textual.screen import Screen

    frames: list[set[str]] = []  # each screen update: what it painted
    update = Screen._compositor_refresh

    def counted(self: Screen) -> None:
        frames.append({w.id or type(w).__name__ for w in self._dirty_widgets})
        update(self)

    monkeypatch.setattr(Screen, "_compositor_refresh", counted)
    app = _long_app(300)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        heatmap = app.explorer.heatmap
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await settle(pilot)
        assert heatmap.show_horizontal_scrollbar
        for key, wide in (("right", False), ("left", True)):
            frames.clear()
            await pilot.press(key)
            await pilot.pause()
            assert heatmap.show_horizontal_scrollbar is wide, app.view.name
            assert sum("heatmap" in frame for frame in frames) == 1, (app.view.name, frames)
        frames.clear()
        app.query_one("#inspector").refresh(layout=True)  # a layout pass that leaves the heatmap's size alone
        await pilot.pause()
        assert frames and not any("ScrollBar" in frame for frame in frames), frames  # nor repaints its scrollbars


@pytest.mark.slow
async def test_the_inspector_lays_the_screen_out_only_when_its_height_changes(monkeypatch) -> None:
    from textual.screen import Screen

    from attn_tui.explain.cell import explain
    from attn_tui.tui.widgets.inspector import Inspector

    layouts: list[Screen] = []
    whole = Screen._refresh_layout

    def counted(self: Screen, *args, **kwargs) -> None:
        layouts.append(self)
        whole(self, *args, **kwargs)

    monkeypatch.setattr(Screen, "_refresh_layout", counted)
    app = sample_app()
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        inspector = app.query_one(Inspector)
        arithmetic = explain(app.trace, app.view.place, app.view.index(0, 0))
        inspector.show("(0, 0)", arithmetic)
        await pilot.pause()
        height, layouts[:] = inspector.size.height, []
        inspector.show("(0, 0)", arithmetic)  # new text, as many lines
        await pilot.pause()
        assert layouts == [] and inspector.size.height == height
        inspector.show("(0, 0)", arithmetic, ("A", "B", arithmetic))  # comparing: twice as many lines
        await pilot.pause()
        assert layouts and inspector.size.height > height
