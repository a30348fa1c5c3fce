"""Stages as Rich heatmap tables for `attn-tui stages --format table` (fits 80 columns)."""

from __future__ import annotations

import torch
from rich import box
from rich.console import Console, Group, RenderableType
from rich.table import Table
from rich.text import Text

from attn_tui.core.masks import MaskSpec
from attn_tui.core.stage import Stage, Trace
from attn_tui.present.grid import Grid, as_array
from attn_tui.present.text import printable
from attn_tui.render.colors import MASKED_STYLE, Scale, format_value
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.labels import fit_label

CELL = 7  # characters per value cell
LABEL = 10  # cells for row labels
MAX_ROWS = 32  # rows printed per stage; JSON has them all
MAX_SLICES = 3  # query slices printed for the 3-D energy stage


def stage_scale(stage: Stage, masked: torch.Tensor | None) -> Scale:
    """The app's colour range (grid_scale): finite cells only, masked cells left out."""
    values = as_array(stage.tensor.reshape(-1, stage.shape[-1]) if stage.tensor.dim() else stage.tensor[None, None])
    hidden = None if masked is None else as_array(masked).astype(bool)
    return grid_scale(Grid(values, (), (), masked=hidden, probability=stage.name in ("weights", "alignment")))


def _matrix_table(matrix: torch.Tensor, row_labels: tuple[str, ...], col_labels: tuple[str, ...],
                  scale: Scale, masked: torch.Tensor | None, width: int) -> tuple[Table, list[str]]:
    """One 2-D slice as a coloured table; returns it and notes about what was cut."""
    notes: list[str] = []
    n_rows, n_cols = matrix.shape
    fit_cols = max(1, (width - LABEL - 1) // (CELL + 1))
    cols = list(range(n_cols)) if n_cols <= fit_cols else list(range(fit_cols - 1))
    rows = list(range(min(n_rows, MAX_ROWS)))
    if len(cols) < n_cols:
        notes.append(f"showing {len(cols)} of {n_cols} columns")
    if len(rows) < n_rows:
        notes.append(f"showing {len(rows)} of {n_rows} rows")
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 0), pad_edge=False, show_edge=False, collapse_padding=True)
    table.add_column("", width=LABEL, no_wrap=True, style="bold")
    for j in cols:
        table.add_column(Text(fit_label(col_labels[j], CELL), justify="right"), width=CELL, no_wrap=True,
                         justify="right")
    if len(cols) < n_cols:
        table.add_column("…", width=1)
    values = matrix.detach().to("cpu", torch.float64)
    for i in rows:
        cells: list[RenderableType] = [Text(fit_label(row_labels[i], LABEL))]
        for j in cols:
            value = float(values[i, j])
            if masked is not None and bool(masked[i, j]) and value != float("-inf"):
                cells.append(Text("×".rjust(CELL), style=MASKED_STYLE))
            else:
                cells.append(Text(format_value(value, CELL - 1).rjust(CELL), style=scale.style(value)))
        if len(cols) < n_cols:
            cells.append(Text("…"))
        table.add_row(*cells)
    return table, notes


def stage_renderable(stage: Stage, mask: MaskSpec | None = None, width: int = 80) -> RenderableType:
    """Header (name, shape, formula) plus the heatmap table(s) of one stage; `mask` hatches masked cells."""
    head = f" · head {stage.head}" if stage.head is not None else ""
    head += f" · step {stage.step}" if stage.step is not None else ""
    title = Text.assemble((stage.name, "bold cyan"), (head, "cyan"),
                          ("  " + "×".join(map(str, stage.shape)), "dim"))
    parts: list[RenderableType] = [title, Text(stage.formula, style="italic")]
    masked = None if mask is None or stage.tensor.dim() != 2 else ~mask.allowed.cpu()
    scale = stage_scale(stage, masked)
    t = stage.tensor
    notes: list[str] = []
    if t.dim() == 1:
        t = t[None, :]
    if t.dim() == 2:
        rows = stage.axes[0].labels if stage.tensor.dim() == 2 else ("",)
        table, notes = _matrix_table(t, rows, stage.axes[-1].labels, scale, masked, width)
        parts.append(table)
    else:  # (L, S, hidden): one slice per query
        for i in range(min(t.shape[0], MAX_SLICES)):
            parts.append(Text(f"{stage.axes[0].name} {printable(stage.axes[0].labels[i])}:", style="bold"))
            table, notes = _matrix_table(t[i], stage.axes[1].labels, stage.axes[2].labels, scale, None, width)
            parts.append(table)
        if t.shape[0] > MAX_SLICES:
            notes.append(f"showing {MAX_SLICES} of {t.shape[0]} query slices")
    if stage.name == "weights":
        sums = stage.tensor.float().sum(dim=-1)
        parts.append(Text(f"row sums: min {float(sums.min()):.6f}, max {float(sums.max()):.6f}"
                          " (1 for every row that may attend somewhere)", style="dim"))
    legend = (f"scale {scale.lo:.3g} … {scale.hi:.3g}" + ("  × masked" if masked is not None else "") +
              ("  -∞ masked fill" if bool(torch.isneginf(stage.tensor).any()) else ""))
    parts.append(Text(legend + ("; " + "; ".join(notes) + " (--format json has all)" if notes else ""),
                      style="dim"))
    return Group(*parts)


def print_trace(trace: Trace, stages: list[Stage], console: Console | None = None) -> None:
    console = console or Console()
    width = min(console.width, 120)
    what = trace.meta.title
    layers = {s.layer for s in stages if s.layer is not None}
    heads = {s.head for s in stages if s.head is not None}
    if len(layers) == 1 and len(heads) == 1:
        what += f" layer {layers.pop()} head {heads.pop()}"
    head = Text.assemble(("attn-tui ", "bold"), (printable(what), "bold magenta"),
                         f"  device {trace.device}  dtype {trace.dtype}  "
                         f"queries {len(trace.query_tokens)}  keys {len(trace.key_tokens)}")
    console.print(head)
    for stage in stages:
        console.print()
        console.print(stage_renderable(stage, trace.mask_of(stage), width))
    for warning in trace.warnings:
        console.print(Text("warning: " + warning, style="yellow"))
