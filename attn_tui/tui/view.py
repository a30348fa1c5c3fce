"""What the app shows for one (trace, stage, head, query): the grid, its shape line, the checks.

Reads tensors only through their own methods, so this module never imports torch
itself; `attn_tui.core.inspect` (which does) is imported when a trace exists, i.e.
after torch has loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_tui.render.heatmap import Grid, as_array

MASKABLE = ("masked", "weights")
TOKEN_AXES = ("query", "key", "token")


@dataclass(frozen=True)
class StageView:
    """Everything drawn for the current stage, computed once per stage/head/query change."""

    name: str
    head: int | None
    grid: Grid
    formula: str
    shape: str
    note: str  # e.g. the row-sum check of weights, or which query an energy slice shows
    index_prefix: tuple[int, ...]  # leading index of a sliced 3-D stage (the energy's query)
    vector: bool = False  # a 1-D stage drawn as one row
    step: int | None = None  # the decoder step of a seq2seq stage

    def index(self, row: int, col: int) -> tuple[int, ...]:
        """The stage tensor's index of a grid cell (the grid may be a slice or a lifted vector)."""
        return (col,) if self.vector else self.index_prefix + (row, col)


def stage_at(trace: Any, name: str, head: int | None, step: int | None = None) -> Any:
    """The stage called `name` at decoder step `step` (seq2seq), else of head `head`."""
    if step is None:
        return trace.stage(name, head)
    return next(s for s in trace.stages if s.name == name and s.step == step)


def stage_view(trace: Any, name: str, head: int, query: int, step: int | None = None) -> StageView:
    """Build the grid of one stage; 3-D stages are sliced at `query`, 1-D ones become a row."""
    from attn_tui.core.inspect import mask_of

    stage = stage_at(trace, name, head, step)
    per_head = stage.head
    tensor = stage.tensor.detach().float().cpu()
    axes = stage.axes
    prefix: tuple[int, ...] = ()
    note = ""
    if tensor.dim() == 3:
        query = max(0, min(query, tensor.shape[0] - 1))
        prefix = (query,)
        note = (f"query {query} {axes[0].labels[query]!r} (, . change it): "
                f"rows {axes[1].name}s, columns {axes[2].name}")
        tensor, axes = tensor[query], axes[1:]  # (S, hidden)
    vector = tensor.dim() == 1
    if vector:
        from attn_tui.core.stage import Axis

        tensor = tensor[None, :]  # (1, n)
        axes = (Axis("", ("",)), axes[0])
    masked = None
    if name in MASKABLE:
        mask = mask_of(trace, per_head)  # (L, S) bool, True = may attend
        if mask is not None:
            masked = (~mask).cpu().numpy()
    if name == "weights":
        note = _row_sums(tensor)
    special = frozenset(trace.config.get("special_tokens", ()))  # a real model's [CLS], [SEP], …
    grid = Grid(as_array(tensor), tuple(axes[0].labels), tuple(axes[1].labels), axes[0].name, axes[1].name,
                masked, probability=name in ("weights", "alignment"),
                special_rows=special if axes[0].name in TOKEN_AXES else frozenset(),
                special_cols=special if axes[1].name in TOKEN_AXES else frozenset())
    shape = "×".join(str(n) for n in stage.shape) + "  (" + " × ".join(a.name for a in stage.axes) + ")"
    return StageView(name, per_head, grid, stage.formula, shape, note, prefix, vector, step)


def _row_sums(weights: Any) -> str:
    """Check, with the numbers, that each row of the weights sums to 1 (or 0 when fully masked)."""
    sums = weights.double().sum(dim=-1)  # (L,)
    live = sums > 0.5
    deviation = float((sums[live] - 1).abs().max()) if bool(live.any()) else 0.0
    text = f"rows sum to 1 (±{deviation:.0e})"
    empty = [i for i, ok in enumerate(live.tolist()) if not ok]
    if empty:
        text += f"; rows {empty} sum to 0: they may attend to nothing"
    return text


def heads_grids(trace: Any, view: StageView, query: int) -> tuple[list[tuple[str, Grid]], int, str]:
    """The current stage for every head (titles, grids), the index to highlight, and a note."""
    if view.head is None:
        note = "only multihead has several heads" if trace.heads == 1 else "this stage is shared by all heads"
        return [(view.name, view.grid)], 0, note
    grids = [(f"head {h}", stage_view(trace, view.name, h, query).grid) for h in range(trace.heads)]
    return grids, view.head, ""


PARAM_ROWS, PARAM_COLS = 24, 48  # the most cells of one parameter the params panel draws


def overview(tensor: Any, rows: int = PARAM_ROWS, cols: int = PARAM_COLS) -> tuple[Any, str]:
    """A 2-D tensor cut down to at most rows × cols by block means, and a note saying how much."""
    import torch.nn.functional as F  # noqa: N812 — called once a trace exists, so torch is loaded

    t = tensor.detach().float().cpu()
    if t.dim() == 1:
        t = t[None, :]  # (1, n)
    if t.shape[0] <= rows and t.shape[1] <= cols:
        return t, ""
    shape = (min(rows, t.shape[0]), min(cols, t.shape[1]))
    small = F.adaptive_avg_pool2d(t[None, None], shape)[0, 0]  # (rows, cols)
    return small, f" (block means, {t.shape[0] / shape[0]:.3g}×{t.shape[1] / shape[1]:.3g} values a cell)"


def param_grids(trace: Any) -> list[tuple[str, Grid]]:
    """Every learned (seeded) parameter of the trace as a small grid; large ones as block-mean overviews.

    A 4096-wide weight has 16 million values; drawn whole it would take minutes. The
    overview costs one pooling pass and draws at most PARAM_ROWS × PARAM_COLS cells.
    """
    grids = []
    for name, tensor in trace.params.items():
        small, note = overview(tensor)
        rows, cols = small.shape
        grids.append((f"{name} {'×'.join(map(str, tensor.shape))}{note}",
                      Grid(as_array(small), tuple(map(str, range(rows))), tuple(map(str, range(cols))))))
    return grids
