"""The heatmap: a Line API ScrollView, so a frame costs the visible cells, not the whole matrix.

Column labels stay on the first line and row labels in the first columns while the
matrix scrolls under them. The app owns the cursor; this widget draws it and reports clicks.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip

from attn_tui.render.heatmap import (Grid, Layout, corner_segment, header_segments, label_segment,
                                     layout_for, line_segments)
from attn_tui.tui.messages import CellClicked

MESSAGE_STYLE = Style(color="grey70", italic=True)


class Heatmap(ScrollView, can_focus=True, inherit_bindings=False):
    """Draws a `Grid` line by line; set `show(grid, cursor)` or `show_message(text)`."""

    BINDINGS = [
        Binding("pageup", "page_up", "Page up", show=False, id="heatmap.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="heatmap.page_down"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.grid: Grid | None = None
        self.layout_info: Layout | None = None
        self.cursor: tuple[int, int] | None = None
        self.message = "loading torch…"
        self._scale = None
        self._cache: LRUCache[tuple, Strip] = LRUCache(1024)

    def show(self, grid: Grid, cursor: tuple[int, int] | None) -> None:
        """Take a new grid (new stage, head or data); the layout follows the widget's width."""
        self.grid = grid
        self._scale = grid.scale()
        self.cursor = cursor
        self._relayout()

    def show_message(self, text: str) -> None:
        self.grid = None
        self.styles.max_height = None
        self.message = text
        self._cache.clear()
        self.virtual_size = Size(0, 0)
        self.refresh()

    def move_cursor(self, cursor: tuple[int, int]) -> None:
        """Move the drawn cursor and keep it in view; only the cache is dropped, not the layout."""
        self.cursor = cursor
        self._cache.clear()
        self._scroll_to_cursor()
        self.refresh()

    def _relayout(self) -> None:
        self._cache.clear()
        if self.grid is None:
            return
        self.layout_info = layout_for(self.grid, max(self.size.width, 20))
        lay = self.layout_info
        self.virtual_size = Size(lay.width, lay.header_height + lay.lines)
        # No taller than the matrix (+1 for a horizontal scrollbar): the inspector gets the rest.
        self.styles.max_height = lay.header_height + lay.lines + 1
        self._scroll_to_cursor()
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        lay = self.layout_info
        if self.grid is None or lay is None or self.cursor is None:
            return
        row, col = self.cursor
        line = row // 2 if lay.dense else row
        x = lay.label_width + col * lay.cell_width
        region = Region(x, lay.header_height + line, lay.cell_width, 1)
        self.scroll_to_region(region, animate=False, spacing=None, immediate=True)

    def on_resize(self, event: Resize) -> None:
        self._relayout()

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.grid is None or self.layout_info is None:
            text = self.message if y == 0 else ""
            return Strip([Segment(text, MESSAGE_STYLE)]).adjust_cell_length(width)
        scroll_x, scroll_y = self.scroll_offset
        lay = self.layout_info
        line = None if y < lay.header_height else y - lay.header_height + scroll_y
        if line is not None and line >= lay.lines:
            return Strip.blank(width)
        key = (line, scroll_x, width, self.cursor if self._cursor_on(line) else None)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        strip = self._build_line(line, scroll_x, width)
        self._cache[key] = strip
        return strip

    def _cursor_on(self, line: int | None) -> bool:
        if self.cursor is None or self.layout_info is None:
            return False
        if line is None:
            return True
        row = self.cursor[0]
        return (row // 2 if self.layout_info.dense else row) == line

    def _build_line(self, line: int | None, scroll_x: int, width: int) -> Strip:
        """Label column + only the columns that are on screen, cropped to the cells in view."""
        grid, lay = self.grid, self.layout_info
        assert grid is not None and lay is not None
        cw = lay.cell_width
        first = min(grid.cols, scroll_x // cw)
        last = min(grid.cols, (scroll_x + max(0, width - lay.label_width)) // cw + 1)
        cursor_row = self.cursor[0] if self.cursor else None
        cursor_col = self.cursor[1] if self.cursor else None
        if line is None:
            head = [corner_segment(grid, lay)]
            body = header_segments(grid, lay, first, last, cursor_col)
        else:
            head = [label_segment(grid, lay, line, cursor_row)]
            body = line_segments(grid, self._scale, lay, line, first, last, self.cursor)
        offset = scroll_x - first * cw
        body_strip = Strip(body).crop(offset, offset + max(0, width - lay.label_width))
        return Strip.join([Strip(head), body_strip]).adjust_cell_length(width)

    def on_click(self, event: Click) -> None:
        """Turn a click into a cell (in grid coordinates) and tell the app."""
        lay, grid = self.layout_info, self.grid
        if lay is None or grid is None:
            return
        x = event.x - lay.label_width + self.scroll_offset.x
        y = event.y - lay.header_height
        if x < 0 or y < 0:
            return
        col = x // lay.cell_width
        line = y + self.scroll_offset.y
        row = line * 2 if lay.dense else line
        if row < grid.rows and col < grid.cols:
            self.post_message(CellClicked(row, col))
