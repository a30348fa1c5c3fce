"""Compare mode's panel: A, B and B − A side by side, one cursor for all three."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.widgets import Static

from attn_tui.i18n import _
from attn_tui.present.grid import Grid
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.legend import ramp
from attn_tui.tui.widgets.echo import shown
from attn_tui.tui.widgets.heatmap import Heatmap

SIDES = ("a", "b", "diff")


def scale_line(shared: bool) -> Text:
    """Which colour scales the three panels use, and the key that switches them."""
    if shared:
        return Text(_("A and B share one colour scale; B − A has its own, symmetric about 0 (s: a scale per "
                      "panel)"))
    return Text(_("A, B and B − A each on its own colour scale (s: one scale for A and B)"))


class CompareView(Horizontal):
    """Three heatmaps; moving the cursor in any of them moves it in all, and the explorer hears one move."""

    DEFAULT_CSS = """
    CompareView { height: 1fr; }
    CompareView > Vertical { width: 1fr; height: 1fr; margin: 0 1 0 0; }
    CompareView .compare-title { height: 1; text-style: bold; }  /* 2 when a title wraps: see fit_titles */
    CompareView .compare-legend { height: 1; }
    CompareView #compare-foot { dock: bottom; height: auto; width: 100%; margin: 0; }
    CompareView #compare-scale { height: auto; max-height: 2; color: $text-muted; }
    CompareView #compare-note { display: none; height: auto; max-height: 2; }
    CompareView.-noted #compare-note { display: block; }
    CompareView Heatmap { height: 1fr; }
    """

    def compose(self) -> ComposeResult:
        with Vertical(id="compare-foot"):  # under the three: which scales they use, and the two models' note
            yield Static("", id="compare-scale")
            yield Static("", id="compare-note")
        for side in SIDES:
            with Vertical(id=f"compare-{side}"):
                yield Static("", classes="compare-title")
                yield Heatmap(id=f"compare-{side}-map")
                yield Static("", classes="compare-legend")

    def heatmap(self, side: str) -> Heatmap:
        return self.query_one(f"#compare-{side}-map", Heatmap)

    def title_lines(self) -> int:
        """Lines the longest of the three titles wraps to in its panel's width (at most two): every title
        takes as many, so the three matrices' rows stay side by side."""
        width = self.query_one("#compare-a", Vertical).size.width
        return max([self._lines(t, width) for t in self.query(".compare-title").results(Static)], default=1)

    def _lines(self, static: Static, width: int, most: int = 2) -> int:
        """Lines a static's text wraps to in `width` cells, one to `most`."""
        text = static.content
        if width <= 0 or not isinstance(text, Text) or not text.plain:
            return 1
        return max(1, min(most, len(text.wrap(self.app.console, width))))

    def fit_titles(self) -> None:
        lines = self.title_lines()
        for title in self.query(".compare-title").results(Static):
            title.styles.height = lines

    def show(self, titles: dict[str, Text | str], grids: dict[str, Grid | None], messages: dict[str, str],
             note: str = "", shared: bool = True) -> None:
        """Each side's title and grid; a side without a grid says why (B lacks the stage, shapes differ).

        `note`: a line under the three about all of them (two models: where their strongest inputs agree);
        `shared`: whether A and B were put on one colour scale, which the line under them says.
        """
        self.query_one("#compare-scale", Static).update(scale_line(shared))
        self.query_one("#compare-note", Static).update(shown(note, "italic"))
        self.set_class(bool(note), "-noted")
        for side in SIDES:
            box = self.query_one(f"#compare-{side}", Vertical)
            title = titles.get(side, "")
            box.query_one(".compare-title", Static).update(shown(title))
            heatmap = self.heatmap(side)
            grid = grids.get(side)
            legend = box.query_one(".compare-legend", Static)
            if grid is None:
                heatmap.clear(messages.get(side, ""))
                legend.update("")
                continue
            heatmap.show(grid)
            legend.update(ramp(grid_scale(grid), 8))
        self._sync(self.heatmap("a").cursor)

    def tallest(self) -> int | None:
        """Lines the tallest of the three heatmaps needs (None before any is drawn)."""
        heights = [self.heatmap(side).styles.max_height for side in SIDES]
        cells = [int(h.value) for h in heights if h is not None]
        return max(cells) if cells else None

    @property
    def chrome(self) -> int:
        """Lines besides the heatmaps: a title and the scale line (one line or two each), a legend, and the note
        when there is one."""
        scale = self._lines(self.query_one("#compare-scale", Static), self.size.width)  # one line, or two
        return self.title_lines() + 1 + scale + (2 if self.has_class("-noted") else 0)

    @property
    def cursor(self) -> tuple[int, int]:
        return self.heatmap("a").cursor

    def on_heatmap_cursor_moved(self, message: Heatmap.CursorMoved) -> None:
        """Follow the heatmap that moved; only A's moves travel on to the explorer."""
        self._sync((message.row, message.col))
        if message.heatmap is not self.heatmap("a"):
            message.stop()
            self.heatmap("a").cursor = (message.row, message.col)

    def _sync(self, cursor: tuple[int, int]) -> None:
        a = self.heatmap("a")
        for side in ("b", "diff"):
            heatmap = self.heatmap(side)
            if heatmap.grid is not None and heatmap.cursor != cursor:
                with heatmap.prevent(Heatmap.CursorMoved):
                    heatmap.cursor = cursor
            if heatmap.grid is not None and a.grid is not None and heatmap.grid.cols == a.grid.cols:
                heatmap.scroll_to(x=a.scroll_offset.x, animate=False, immediate=True)  # the same columns in view

    def caption(self) -> str:
        return _("compare: one cursor for A, B and B − A (c leaves)")
