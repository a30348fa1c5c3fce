"""Stages as Rich heatmap tables for `attn-tui stages --format table` (fits 80 columns)."""

from __future__ import annotations

import torch
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.settings_line import settings_line
from attn_tui.present.text import printable
from attn_tui.present.titles import axis_title
from attn_tui.render.colors import MASKED_STYLE, Scale, format_value
from attn_tui.render.labels import fit_label
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.stage import Stage, Trace
from attn_tui.trace.values import StageStats, stats_of

CELL = 7  # characters per value cell
LABEL = 10  # cells for row labels
MAX_ROWS = 32  # rows printed per stage; JSON has them all
MAX_SLICES = 3  # query slices printed for the 3-D energy stage


def _matrix_table(values: torch.Tensor, total: tuple[int, int], row_labels: tuple[str, ...],
                  col_labels: tuple[str, ...], scale: Scale, hidden: torch.Tensor | None,
                  width: int) -> tuple[Table, list[str]]:
    """The first rows and columns of a 2-D slice as a coloured table, and notes about what was cut.

    `values` holds only the cells shown (at most MAX_ROWS rows and the columns that fit);
    `total` is the slice's whole shape. Masked cells show their fill in the masked style, so
    −∞ and −1e9 read differently, as they compute differently.
    """
    notes: list[str] = []
    n_rows, n_cols = total
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
        table.add_column(Text(fit_label(col_labels[j], CELL), justify="right"), width=CELL, no_wrap=True,
                         justify="right")
    if len(cols) < n_cols:
        table.add_column("…", width=1)
    cells_shown = values.to("cpu", torch.float64).tolist()
    for i in rows:
        cells: list[RenderableType] = [Text(fit_label(row_labels[i], LABEL))]
        for j in cols:
            value = cells_shown[i][j]
            masked = hidden is not None and bool(hidden[i, j])
            cells.append(Text(format_value(value, CELL - 1).rjust(CELL),
                              style=MASKED_STYLE if masked else scale.style(value)))
        if len(cols) < n_cols:
            cells.append(Text("…"))
        table.add_row(*cells)
    return table, notes


def stage_renderable(stage: Stage, stats: StageStats, mask: MaskSpec | None = None,
                     width: int = 80) -> RenderableType:
    """Header (name, shape, formula) plus the heatmap table(s) of one stage; reads only the cells it prints.

    `stats` gives the colour range (finite, unmasked cells: the app's range) and the row
    sums; `mask` marks the masked cells.
    """
    head = " · " + _("head {h}").format(h=stage.head) if stage.head is not None else ""
    head += " · " + _("step {t}").format(t=stage.step) if stage.step is not None else ""
    title = Text.assemble((printable(stage.name), "bold cyan"), (head, "cyan"),
                          ("  " + "×".join(map(str, stage.shape)), "dim"))
    parts: list[RenderableType] = [title, Text(printable(str(stage.formula)), style="italic")]
    scale = Scale.fit(*stats.finite_range, probability=stage.name in ("weights", "alignment"))
    data = stage.data
    fit_cols = max(1, (width - LABEL - 1) // (CELL + 1))
    notes: list[str] = []
    if data.dim() <= 2:
        shape = (1, stage.shape[0]) if data.dim() == 1 else (stage.shape[0], stage.shape[1])
        values = stage.tensor.reshape(1, -1) if data.dim() == 1 else data[:MAX_ROWS, :fit_cols]
        rows = stage.axes[0].labels if data.dim() == 2 else ("",)
        hidden = None if mask is None or data.dim() != 2 else ~mask.tile(slice(0, MAX_ROWS), slice(0, fit_cols))
        table, notes = _matrix_table(values, shape, rows, stage.axes[-1].labels, scale, hidden, width)
        parts.append(table)
    else:  # (L, S, hidden): one slice per query
        for i in range(min(stage.shape[0], MAX_SLICES)):
            parts.append(Text(printable(f"{axis_title(stage.axes[0].name)} {stage.axes[0].labels[i]}:"), style="bold"))
            table, notes = _matrix_table(data[i, :MAX_ROWS, :fit_cols], (stage.shape[1], stage.shape[2]),
                                         stage.axes[1].labels, stage.axes[2].labels, scale, None, width)
            parts.append(table)
        if stage.shape[0] > MAX_SLICES:
            notes.append(_("showing {n} of {total} query slices").format(n=MAX_SLICES, total=stage.shape[0]))
    if stage.name == "weights":
        empty = "; " + _("rows {rows} sum to 0 (nothing to attend)").format(rows=stats.empty_rows[:8]) \
            if stats.empty_rows else ""
        parts.append(Text(_("row sums: 1 within {deviation} for every row that may attend").format(
            deviation=f"{stats.row_deviation:.1e}") + empty, style="dim"))
    legend = _("scale {lo} … {hi}").format(lo=f"{scale.lo:.3g}", hi=f"{scale.hi:.3g}") + (
        "  " + _("masked cells in their own colour") if stats.masked else "")
    parts.append(Text(legend + ("; " + "; ".join(notes) + " " + _("(--format json has all)") if notes else ""),
                      style="dim"))
    return Group(*parts)


def print_trace(trace: Trace, stages: list[Stage], console: Console | None = None) -> None:
    console = console or Console()
    width = min(console.width, 120)
    what = trace.meta.title
    layers = {s.layer for s in stages if s.layer is not None}
    heads = {s.head for s in stages if s.head is not None}
    if len(layers) == 1 and len(heads) == 1:
        what += " " + _("layer {layer} head {head}").format(layer=layers.pop(), head=heads.pop())
    head = Text.assemble(("attn-tui ", "bold"), (printable(what), "bold magenta"), "  " + _(
        "device {device}  dtype {dtype}  queries {queries}  keys {keys}").format(
        device=trace.device, dtype=trace.dtype, queries=len(trace.query_tokens), keys=len(trace.key_tokens)))
    console.print(head)
    if changed := settings_line(trace):
        console.print(Text(changed, style="yellow"))
    for stage in stages:
        console.print()
        console.print(stage_renderable(stage, stats_of(trace, stage), trace.mask_of(stage), width))
    for warning in trace.warnings:
        console.print(Text(_("warning: {warning}").format(warning=printable(str(warning))), style="yellow"))
