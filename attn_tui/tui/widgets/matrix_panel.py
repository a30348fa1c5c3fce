"""One labelled matrix with its title and legend, beside the stages: rollout, or the alignment so far."""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from attn_tui.present.grid import Grid
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.legend import legend
from attn_tui.tui.widgets.echo import shown
from attn_tui.tui.widgets.heatmap import Heatmap


class MatrixPanel(Vertical):
    """A title, a Heatmap, its legend and the value of the cell under its cursor; cursor moves stay here."""

    DEFAULT_CSS = """
    MatrixPanel .panel-title {
        height: auto;
        max-height: 2;
        text-style: bold;
    }
    MatrixPanel .panel-legend, MatrixPanel .panel-cell {
        height: 1;
    }
    MatrixPanel Heatmap {
        height: 1fr;
    }
    """

    grid: Grid | None = None

    def compose(self) -> ComposeResult:
        yield Static("", classes="panel-title")
        yield Heatmap(id=f"{self.id}-map", cursor_keys=False)  # a click picks a cell; arrows move the stages' cursor
        yield Static("", classes="panel-legend")
        yield Static("", classes="panel-cell")

    def show(self, title: Text | str, grid: Grid, about: str) -> None:
        self.grid = grid
        self.query_one(".panel-title", Static).update(shown(title))  # a model's or a row's name: user text
        self.query_one(Heatmap).show(grid)
        lo, hi = grid.finite_range()
        self.query_one(".panel-legend", Static).update(legend(grid_scale(grid), lo, hi, grid.marks()))
        self.query_one(".panel-cell", Static).update(shown(about, "dim"))

    def on_heatmap_cursor_moved(self, event: Heatmap.CursorMoved) -> None:
        event.stop()
        grid = self.grid
        if grid is None or grid.is_blank(event.row):
            return
        value = grid.value(event.row, event.col)
        self.query_one(".panel-cell", Static).update(
            Text(f"[{event.row}, {event.col}]  {grid.row_labels[event.row]!r} × {grid.col_labels[event.col]!r} "
                 f"= {value:.4f}", style="bold yellow"))
