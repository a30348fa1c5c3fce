"""Small multiples: the current stage for every head side by side, to compare what heads attend to."""

from __future__ import annotations

from rich.columns import Columns
from rich.console import Group, RenderableType
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Static

from attn_tui.i18n import _
from attn_tui.present.grid import Grid
from attn_tui.present.stage_view import HeadsPanel
from attn_tui.render.colors import Scale
from attn_tui.render.heatmap import grid_scale, small_multiple
from attn_tui.render.legend import ramp
from attn_tui.tui.widgets.echo import shown


def _block(title: str, grid: Grid, scale: Scale, current: bool) -> Group:
    lines = [Text.assemble(*((seg.text, seg.style or "") for seg in line), no_wrap=True, overflow="crop")
             for line in small_multiple(grid, scale)]
    return Group(Text(title, style="bold black on yellow" if current else "bold"), *lines)


def scale_caption(panel: HeadsPanel) -> Text:
    """Which colour scale the heads share, as a legend line (the key that switches it included)."""
    if panel.shared is None:
        return Text(_("each head on its own colour range (s: one scale for all heads)"), style="dim")
    scale = Scale.fit(*panel.shared, kind=panel.colour_scale)
    text = Text(_("one colour scale for every head:") + " ", style="dim")
    text.append_text(ramp(scale))
    text.append("  " + _("(s: each head on its own range)"), style="dim")
    return text


class HeadsGrid(VerticalScroll, inherit_bindings=False):
    """Small multiples: one block per head (or per learned parameter), titled, labelled, side by side.

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

    def show(self, title: str, panel: HeadsPanel, extra: RenderableType | None = None) -> None:
        """`extra` is drawn above the heads: which key/value head each query head reads (grouped-query)."""
        self.titles = [name for name, _grid in panel.grids]  # what is on show, for tests and the palette
        self.extra = extra
        shared = None if panel.shared is None else Scale.fit(*panel.shared, kind=panel.colour_scale)
        blocks = [_block(name, grid, shared or grid_scale(grid), n == panel.current)
                  for n, (name, grid) in enumerate(panel.grids)]
        parts: list[RenderableType] = [shown(title, "bold")]  # a model's name: user text
        if len(panel.grids) > 1 or panel.shared is not None:
            parts.append(scale_caption(panel))
        if panel.note:
            parts.append(Text(panel.note, style="dim"))
        if extra is not None:
            parts.append(extra)
        parts.append(Columns(blocks, padding=(1, 2)))
        self.query_one("#heads-grid-body", Static).update(Group(*parts))
