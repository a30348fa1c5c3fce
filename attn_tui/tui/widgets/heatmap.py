"""The heatmap: a Line API ScrollView, so a frame costs the visible cells, not the whole matrix.

Column labels stay in the header lines and row labels in the first columns while the
matrix scrolls under them; every row is labelled, and so is the cursor's column, always.
The heatmap owns its cell cursor, DataTable-style: a reactive `cursor` clamped to the grid,
its own cursor keys, and `Heatmap.CursorMoved` posted on each move; a move repaints only
the lines the cursor left and entered (and the header).
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual.binding import Binding
from textual.cache import LRUCache
from textual.events import Click, Resize
from textual.geometry import Region, Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from attn_tui.i18n import _
from attn_tui.present.grid import Grid
from attn_tui.render.colors import Scale
from attn_tui.render.heatmap import (
    Layout,
    corner_segment,
    grid_scale,
    header_lines,
    label_segment,
    layout_for,
    line_segments,
)
from attn_tui.tui.bindings import CURSOR_BINDINGS

MESSAGE_STYLE = Style(color="grey70", italic=True)


class Heatmap(ScrollView, can_focus=True, inherit_bindings=False):
    """Draws a `Grid` line by line (a message until the first one), with a cell cursor: `show(grid)`, `cursor`."""

    DEFAULT_CSS = """
    Heatmap {
        scrollbar-size: 1 1;
        min-height: 4;
    }
    Heatmap:focus {
        background-tint: $foreground 3%;
    }
    """

    BINDINGS = [
        Binding("pageup", "page_up", "Page up", show=False, id="heatmap.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="heatmap.page_down"),
        *CURSOR_BINDINGS,
    ]

    cursor: reactive[tuple[int, int]] = reactive((0, 0), repaint=False, always_update=True, init=False)
    """(row, col) of the cell under the cursor, kept inside the grid; every set repaints what changed, keeps
    the cursor in view and posts `CursorMoved` (a set to the same cell too: it scrolls back to it)."""

    class CursorMoved(Message):
        """The cell cursor moved (a key, a click or a set); row and column are in the grid on show."""

        def __init__(self, heatmap: Heatmap, row: int, col: int) -> None:
            super().__init__()
            self.heatmap, self.row, self.col = heatmap, row, col

        @property
        def control(self) -> Heatmap:
            return self.heatmap

    class HeightChanged(Message):
        """Laid out again for a new width, the heatmap needs another number of lines (its panel may refit)."""

    class CellsWanted(Message):
        """Cells came into view that are not computed yet (a long input's tiles): the explorer has them read off
        the event loop, then calls `cells_arrived`."""

        def __init__(self, heatmap: Heatmap, grid: Grid, region: tuple[int, int, int, int]) -> None:
            super().__init__()
            self.heatmap, self.grid, self.region = heatmap, grid, region  # region: rows r0…r1, columns c0…c1

    def __init__(self, *, id: str | None = None, cursor_keys: bool = True) -> None:
        super().__init__(id=id)
        self.grid: Grid | None = None
        self.layout_info: Layout | None = None
        self.cursor_keys = cursor_keys  # False: the arrow keys pass on (a side panel's map: they move the stages')
        self.message = _("loading torch…")
        self.lines_built = 0  # strips built since creation: what a repaint really cost
        self._scale: Scale | None = None
        self._cache: LRUCache[tuple[object, ...], Strip] = LRUCache(1024)
        self._header_memo: tuple[tuple[object, ...], list[list[Segment]]] | None = None
        self._sizes_seen: tuple[Size, Size, Size] | None = None
        self._laid_out_for = 0  # the width the layout was made for
        self._wanted = False  # cells in view are being read: asked once until they arrive
        self.cells_asked = 0  # times cells in view had to be read first: what scrolling a long input cost

    def show(self, grid: Grid) -> None:
        """Take a new grid (new stage, head or data); the cursor stays where it was, inside the grid."""
        self.grid, self._wanted = grid, False
        self._scale = grid_scale(grid)
        self.set_reactive(Heatmap.cursor, self.validate_cursor(self.cursor))  # the layout below repaints it all
        self._relayout()

    def clear(self, message: str) -> None:
        """No grid: a message in its place (compare mode's B without the stage)."""
        self.grid, self.layout_info, self.message = None, None, message
        self._cache.clear()
        self.virtual_size = Size(0, 1)
        self.refresh()

    def validate_cursor(self, cursor: tuple[int, int]) -> tuple[int, int]:
        if self.grid is None:
            return cursor  # clamped when a grid comes
        row, col = cursor
        return max(0, min(row, self.grid.rows - 1)), max(0, min(col, self.grid.cols - 1))

    def watch_cursor(self, old: tuple[int, int], new: tuple[int, int]) -> None:
        """Repaint the lines the cursor left and entered and the column labels, keep it in view, and say so."""
        if self.layout_info is not None:
            scroll_y = self.scroll_offset.y
            for row in {old[0], new[0]}:
                self.refresh_line(self.layout_info.header_height + row - scroll_y)
            self.refresh(Region(0, 0, self.size.width, self.layout_info.header_height))
        self._scroll_to_cursor()
        self.post_message(self.CursorMoved(self, *new))

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.cursor_keys or action != "cursor"  # not ours: the key goes on to the app's binding

    def action_cursor(self, d_row: int, d_col: int) -> None:
        """Move the cursor by rows and columns (kept inside the grid)."""
        if self.grid is not None:
            self.cursor = (self.cursor[0] + d_row, self.cursor[1] + d_col)

    def _relayout(self) -> None:
        self._cache.clear()
        if self.grid is None:
            return
        self._laid_out_for = max(self.size.width, 20)
        self.layout_info = layout_for(self.grid, self._laid_out_for)
        lay = self.layout_info
        self.virtual_size = Size(lay.width, lay.header_height + lay.lines)
        # No taller than the matrix (+1 for a horizontal scrollbar): the inspector gets the rest.
        self.styles.max_height = lay.header_height + lay.lines + 1
        # Which scrollbars the new size needs, now rather than in the layout pass: decided there, a change
        # would ask for a second layout and paint the whole heatmap again on the frame after.
        self._refresh_scrollbars()
        self._scroll_to_cursor()
        self.refresh()

    def _scroll_to_cursor(self) -> None:
        lay = self.layout_info
        if self.grid is None or lay is None:
            return
        row, col = self.cursor
        # In scroll coordinates a cell starts at (col · width, row): the label column and the header stay put
        # over the scrolled matrix, so the region reaches past the cell by their size on the far side; placed
        # at the label column's end instead, column 0 (and row 0) could stay scrolled under the labels.
        region = Region(col * lay.cell_width, row, lay.cell_width + lay.label_width, 1 + lay.header_height)
        self.scroll_to_region(region, animate=False, spacing=None, immediate=True)

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        """Textual's sizes after a layout pass of the screen: passed on only when one of ours changed.

        Textual's ScrollView compares the size the layout gives it with its own scrollable size; the two
        always differ once the matrix overflows its pane, so every layout pass (any widget growing a line)
        repainted both scrollbars on the frame after, and every such key took a frame longer.
        """
        seen = (size, self.virtual_size, container_size)
        if seen == self._sizes_seen:
            return False
        self._sizes_seen = seen
        return super()._size_updated(size, virtual_size, container_size, layout)

    def on_resize(self, event: Resize) -> None:
        """A new width lays the grid out again; a new height (a stage with or without a horizontal
        scrollbar) only keeps the cursor in view: Textual repaints a resized widget itself."""
        if self.layout_info is not None and self._laid_out_for == max(self.size.width, 20):
            self._scroll_to_cursor()
            return
        height = self.styles.max_height
        self._relayout()
        if self.styles.max_height != height:
            self.post_message(self.HeightChanged())

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.grid is None or self.layout_info is None:
            text = self.message if y == 0 else ""
            return Strip([Segment(text, MESSAGE_STYLE)]).adjust_cell_length(width)
        scroll_x, scroll_y = self.scroll_offset
        lay = self.layout_info
        header = y < lay.header_height
        line = y if header else y - lay.header_height + scroll_y
        if not header and line >= lay.lines:
            return Strip.blank(width)
        on_cursor = header or line == self.cursor[0]
        key = (header, line, scroll_x, width, self.cursor if on_cursor else None)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        if not header and not self._at_hand(line, scroll_x, width):
            return self._coming(line, width)
        strip = self._build_line(header, line, scroll_x, width)
        self.lines_built += 1
        self._cache[key] = strip
        return strip

    def _columns(self, scroll_x: int, width: int) -> tuple[int, int]:
        """The columns on screen at this scroll and width."""
        grid, lay = self.grid, self.layout_info
        assert grid is not None and lay is not None
        cw = lay.cell_width
        return min(grid.cols, scroll_x // cw), min(grid.cols, (scroll_x + max(0, width - lay.label_width)) // cw + 1)

    def _at_hand(self, line: int, scroll_x: int, width: int) -> bool:
        """The line's cells are computed; if not, the cells in view are asked for (once until they arrive)."""
        assert self.grid is not None
        first, last = self._columns(scroll_x, width)
        if self.grid.ready(line, line + 1, first, last):
            return True
        if not self._wanted:
            self._wanted = True
            self.cells_asked += 1
            top = self.scroll_offset.y
            self.post_message(self.CellsWanted(self, self.grid, (top, min(self.grid.rows, top + self.size.height),
                                                                 first, last)))
        return False

    def _coming(self, line: int, width: int) -> Strip:
        """A line whose cells are being computed: its label, and a mark that its values are coming."""
        assert self.grid is not None and self.layout_info is not None
        head = label_segment(self.grid, self.layout_info, line, self.cursor[0])
        return Strip([head, Segment(" …", MESSAGE_STYLE)]).adjust_cell_length(width)

    def cells_arrived(self, grid: Grid) -> None:
        """The cells asked for are computed: draw them (a line still short of some asks again)."""
        if grid is self.grid:
            self._wanted = False
            self.refresh()

    def _build_line(self, header: bool, line: int, scroll_x: int, width: int) -> Strip:
        """Label column + only the columns that are on screen, cropped to the cells in view."""
        grid, lay, scale = self.grid, self.layout_info, self._scale
        assert grid is not None and lay is not None and scale is not None
        cw = lay.cell_width
        first, last = self._columns(scroll_x, width)
        if header:
            head = [corner_segment(grid, lay) if line == lay.header_height - 1 else
                    Segment(" " * lay.label_width)]
            body = self._header(first, last)[line]
        else:
            head = [label_segment(grid, lay, line, self.cursor[0])]
            body = line_segments(grid, scale, lay, line, first, last, self.cursor)
        offset = scroll_x - first * cw
        shown = max(0, width - lay.label_width)  # cells of the matrix in view
        body_strip = Strip(body).crop(offset, offset + shown)
        if lay.show_values:  # the columns the pane's edges cut keep their colour, not a piece of their text
            keep_from = cw - offset if offset else 0
            keep_to = (last - 1) * cw - scroll_x if last * cw > scroll_x + shown else body_strip.cell_length
            body_strip = _blank_outside(body_strip, keep_from, keep_to)
        return Strip.join([Strip(head), body_strip]).adjust_cell_length(width)

    def _header(self, first: int, last: int) -> list[list[Segment]]:
        """The header's lines for the columns in view, placed once for all of them."""
        key = (id(self.grid), id(self.layout_info), first, last, self.cursor[1])
        if self._header_memo is None or self._header_memo[0] != key:
            assert self.grid is not None and self.layout_info is not None
            self._header_memo = (key, header_lines(self.grid, self.layout_info, first, last, self.cursor[1]))
        return self._header_memo[1]

    def on_click(self, event: Click) -> None:
        """A click puts the cursor on the cell under it."""
        lay, grid = self.layout_info, self.grid
        if lay is None or grid is None:
            return
        x = event.x - lay.label_width + self.scroll_offset.x
        y = event.y - lay.header_height
        if x < 0 or y < 0:
            return
        col = x // lay.cell_width
        row = y + self.scroll_offset.y
        if row < grid.rows and col < grid.cols:
            self.cursor = (row, col)


def _blank_outside(strip: Strip, start: int, end: int) -> Strip:
    """The strip with its cells before `start` and from `end` on as spaces in their own colours: a number
    cut by the pane's edge would read as another (`-0.87` as `-0.8`, or `7`)."""
    length = strip.cell_length
    start, end = max(0, min(start, length)), min(length, max(end, start, 0))
    if start == 0 and end == length:
        return strip
    before, kept, after = strip.divide([start, end, length])
    return Strip.join([_spaces(before), kept, _spaces(after)])


def _spaces(strip: Strip) -> Strip:
    return Strip([Segment(" " * segment.cell_length, segment.style) for segment in strip])
