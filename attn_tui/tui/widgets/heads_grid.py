"""Small multiples: the current stage for every head side by side, to compare what heads attend to."""

from __future__ import annotations

from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from attn_tui.present.grid import Grid
from attn_tui.render.heatmap import block_lines


def _block(title: str, grid: Grid, current: bool) -> Group:
    lines = [Text.assemble(*((seg.text, seg.style or "") for seg in line), no_wrap=True, overflow="crop")
             for line in block_lines(grid)]
    return Group(Text(title, style="bold black on yellow" if current else "bold"), *lines)


class HeadsGrid(VerticalScroll, inherit_bindings=False):
    """Small multiples: one block per head (or per learned parameter), titled, side by side.

    Only the page keys scroll it, so the arrows keep stepping stages while it has focus.
    """

    DEFAULT_CSS = """
    HeadsGrid { height: 1fr; }
    """

    BINDINGS = [
        Binding("pageup", "page_up", "Page up", show=False, id="panel.page_up"),
        Binding("pagedown", "page_down", "Page down", show=False, id="panel.page_down"),
    ]

    titles: list[str] = []
    extra: RenderableType | None = None  # drawn above the blocks: which key/value head each query head reads

    def compose(self) -> ComposeResult:
        yield Static("", id="heads-grid-body")

    def show(self, title: str, grids: list[tuple[str, Grid]], current: int, note: str = "",
             extra: RenderableType | None = None) -> None:
        self.titles = [name for name, _ in grids]  # what is on show, for tests and the palette
        self.extra = extra
        blocks = [_block(name, grid, n == current) for n, (name, grid) in enumerate(grids)]
        header = Text(title, style="bold")
        parts: list[RenderableType] = [header, *([Text(note, style="dim")] if note else [])]
        parts += ([extra] if extra is not None else []) + [Columns(blocks, padding=(1, 2))]
        self.query_one("#heads-grid-body", Static).update(Group(*parts))
