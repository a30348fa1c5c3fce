"""Stages as Rich heatmap tables for `attn-tui stages --format table` (fits 80 columns).

Draws what `attn_tui.present.printed` hands over: the grids, colour scales and notes the
app's heatmap draws too, so the terminal table and the app agree on every stage.
"""

from __future__ import annotations

from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.grid import Grid
from attn_tui.present.printed import PrintedStage, PrintedTrace
from attn_tui.present.text import printable
from attn_tui.render.colors import MASKED_STYLE, Scale, format_value
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.labels import fit_label

CELL = 7  # characters per value cell
LABEL = 10  # cells for row labels
MAX_ROWS = 32  # rows printed per stage; JSON has them all


def _matrix_table(grid: Grid, scale: Scale, width: int) -> tuple[Table, list[str]]:
    """The first rows and columns of a grid as a coloured table, and notes about what was cut.

    Only the cells shown are read. Masked cells show their fill in the masked style, so
    −∞ and −1e9 read differently, as they compute differently.
    """
    notes: list[str] = []
    n_rows, n_cols = grid.rows, grid.cols
    fit_cols = max(1, (width - LABEL - 1) // (CELL + 1))
    cols = range(n_cols) if n_cols <= fit_cols else range(fit_cols - 1)
    rows = range(min(n_rows, MAX_ROWS))
    if len(cols) < n_cols:
        notes.append(_("showing {n} of {total} columns").format(n=len(cols), total=n_cols))
    if len(rows) < n_rows:
        notes.append(_("showing {n} of {total} rows").format(n=len(rows), total=n_rows))
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False, show_edge=False, collapse_padding=True)
    table.add_column("", width=LABEL, no_wrap=True, style="bold")
    for j in cols:
        table.add_column(Text(fit_label(grid.col_labels[j], CELL), justify="right"), width=CELL, no_wrap=True,
                         justify="right")
    if len(cols) < n_cols:
        table.add_column("…", width=1)
    values = grid.block(0, len(rows), 0, len(cols)).tolist()
    hidden = grid.masked_block(0, len(rows), 0, len(cols))
    for i in rows:
        cells: list[RenderableType] = [Text(fit_label(grid.row_labels[i], LABEL))]
        for j in cols:
            value = values[i][j]
            masked = hidden is not None and bool(hidden[i, j])
            cells.append(Text(format_value(value, CELL - 1).rjust(CELL),
                              style=MASKED_STYLE if masked else scale.style(value)))
        if len(cols) < n_cols:
            cells.append(Text("…"))
        table.add_row(*cells)
    return table, notes


def stage_renderable(stage: PrintedStage, width: int = 80) -> RenderableType:
    """Header (name, shape, formula) plus the heatmap table(s) of one stage, its notes and its scale."""
    title = Text.assemble((printable(stage.name), "bold cyan"), (stage.where, "cyan"),
                          ("  " + "×".join(map(str, stage.shape)), "dim"))
    parts: list[RenderableType] = [title, Text(printable(stage.formula), style="italic")]
    scale = grid_scale(stage.slices[0][1])
    notes: list[str] = []
    for caption, grid in stage.slices:
        if caption:
            parts.append(Text(caption, style="bold"))
        table, notes = _matrix_table(grid, scale, width)
        parts.append(table)
    if stage.more_slices:
        notes.append(_("showing {n} of {total} query slices").format(n=len(stage.slices),
                                                                     total=len(stage.slices) + stage.more_slices))
    parts += [Text(note, style="dim") for note in stage.facts.notes]
    legend = _("scale {lo} … {hi}").format(lo=f"{scale.lo:.3g}", hi=f"{scale.hi:.3g}") + (
        "  " + _("masked cells in their own colour") if stage.masked else "")
    parts.append(Text(legend + ("; " + "; ".join(notes) + " " + _("(--format json has all)") if notes else ""),
                      style="dim"))
    return Group(*parts)


def print_trace(printed: PrintedTrace, console: Console | None = None) -> None:
    console = console or Console()
    width = min(console.width, 120)
    console.print(Text.assemble(("attn-tui ", "bold"), (printable(printed.title), "bold magenta"),
                                "  " + printed.details))
    if printed.settings:
        console.print(Text(printed.settings, style="yellow"))
    for stage in printed.stages:
        console.print()
        console.print(stage_renderable(stage, width))
    for warning in printed.warnings:
        console.print(Text(_("warning: {warning}").format(warning=printable(warning)), style="yellow"))
