"""The heatmap's own cursor: its keys, its clamping to the grid, and the message it posts on each move."""

from __future__ import annotations

import numpy as np
from textual.app import App, ComposeResult

from attn_tui.present.grid import Grid
from attn_tui.tui.widgets.heatmap import Heatmap

TOKENS = ("a", "b", "c")


class HeatmapApp(App[None]):
    """One heatmap on a 3 × 3 grid; the moves it posts are kept, and a cursor key that reaches the app is too."""

    BINDINGS = [("up", "app_cursor", "the app's cursor key")]

    def __init__(self, cursor_keys: bool = True) -> None:
        super().__init__()
        self.cursor_keys = cursor_keys
        self.moves: list[tuple[int, int]] = []
        self.app_keys = 0

    def compose(self) -> ComposeResult:
        yield Heatmap(id="map", cursor_keys=self.cursor_keys)

    def on_mount(self) -> None:
        heatmap = self.query_one(Heatmap)
        heatmap.show(Grid(np.arange(9.0).reshape(3, 3), TOKENS, TOKENS, "query", "key"))
        heatmap.focus()

    def on_heatmap_cursor_moved(self, message: Heatmap.CursorMoved) -> None:
        assert message.control is self.query_one(Heatmap)
        self.moves.append((message.row, message.col))

    def action_app_cursor(self) -> None:
        self.app_keys += 1


async def test_the_heatmaps_keys_move_its_cursor_inside_the_grid_and_say_so() -> None:
    app = HeatmapApp()
    async with app.run_test(size=(60, 12)) as pilot:
        heatmap = app.query_one(Heatmap)
        await pilot.press("down", "shift+right", "shift+right", "shift+right", "shift+down", "shift+down")
        await pilot.pause()
        assert heatmap.cursor == (2, 2)  # three columns right from 0 stop at the last
        assert app.moves == [(1, 0), (1, 1), (1, 2), (1, 2), (2, 2), (2, 2)]
        await pilot.press("up", "shift+up", "shift+left", "shift+up")
        await pilot.pause()
        assert heatmap.cursor == (0, 1) and app.moves[-1] == (0, 1)
        assert app.app_keys == 0  # the focused heatmap took the key: the app's binding never saw it


async def test_a_set_cursor_is_clamped_and_a_new_grid_keeps_it_inside() -> None:
    app = HeatmapApp()
    async with app.run_test(size=(60, 12)) as pilot:
        heatmap = app.query_one(Heatmap)
        heatmap.cursor = (9, -4)
        await pilot.pause()
        assert heatmap.cursor == (2, 0) and app.moves == [(2, 0)]
        heatmap.show(Grid(np.zeros((2, 2)), TOKENS[:2], TOKENS[:2], "query", "key"))
        await pilot.pause()
        assert heatmap.cursor == (1, 0) and app.moves == [(2, 0)]  # a new grid clamps it without a move


async def test_a_click_puts_the_cursor_on_the_cell() -> None:
    app = HeatmapApp()
    async with app.run_test(size=(60, 12)) as pilot:
        heatmap = app.query_one(Heatmap)
        lay = heatmap.layout_info
        assert lay is not None
        await pilot.click(Heatmap, offset=(lay.label_width + lay.cell_width + 1, lay.header_height + 2))
        await pilot.pause()
        assert heatmap.cursor == (2, 1) and app.moves == [(2, 1)]


async def test_a_heatmap_without_cursor_keys_passes_them_on() -> None:
    app = HeatmapApp(cursor_keys=False)
    async with app.run_test(size=(60, 12)) as pilot:
        await pilot.press("down", "up")
        await pilot.pause()
        assert app.query_one(Heatmap).cursor == (0, 0) and app.moves == []
        assert app.app_keys == 1  # up went on to the app's binding
