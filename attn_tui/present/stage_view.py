"""What the app shows for one stage at one place: the grid, its shape line, its checks.

Textual-free and typed. Tensors are read through their own methods, so this module
never imports torch at import time (the app builds views once a trace exists, i.e.
after torch has loaded).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attn_tui.ask.variants import VARIANTS
from attn_tui.i18n import Msg, _
from attn_tui.present.geometry_line import geometry_line
from attn_tui.present.grid import Grid, GridStats, TiledCells, as_array
from attn_tui.present.stage_facts import StageFacts, stage_facts
from attn_tui.present.titles import axis_title
from attn_tui.trace.catalog import ColourScale
from attn_tui.trace.meta import DecoderRun, GenerationRun, RecordedRun
from attn_tui.trace.ops import Place

if TYPE_CHECKING:
    import numpy as np
    import torch

    from attn_tui.trace.lazy import LazyTensor
    from attn_tui.trace.masks import MaskSpec
    from attn_tui.trace.ops import Place
    from attn_tui.trace.stage import Stage, Trace

TOKEN_AXES = ("query", "key", "token")
PARAM_ROWS, PARAM_COLS = 24, 48  # the most cells of one parameter the params panel draws
SMALL_ROWS, SMALL_COLS = 32, 48  # the most cells of one head in the heads panel


@dataclass(frozen=True)
class StageView:
    """Everything drawn for the stage on show, computed once per stage, head, layer or query change."""

    place: Place
    grid: Grid
    formula: str
    shape: str
    note: str  # the row-sum check of weights, or which query an energy slice shows
    index_prefix: tuple[int, ...]  # leading index of a sliced 3-D stage (the energy's query)
    vector: bool = False  # a 1-D stage drawn as one row

    @property
    def name(self) -> str:
        return self.place.name

    @property
    def head(self) -> int | None:
        return self.place.head

    @property
    def step(self) -> int | None:
        return self.place.step

    def index(self, row: int, col: int) -> tuple[int, ...]:
        """The stage tensor's index of a grid cell (the grid may be a slice or a lifted vector)."""
        return (col,) if self.vector else self.index_prefix + (row, col)


def stage_view(trace: Trace, name: str, layer: int | None, head: int | None, query: int,
               step: int | None = None, module: str | None = None) -> StageView:
    """The grid of one stage; 3-D stages are sliced at `query`, 1-D ones become a row.

    Nothing here walks the stage: its cells are read by the grid a block at a time, and
    its range, marks and row sums come from the stats the worker gathered.
    """
    stage = trace.find(name, layer, head, step, module) or trace.stage(name, layer, None, step, module)  # a recorded
    # module with fewer heads than the trace shows its first head
    sliced = stage_slice(trace, stage, query if stage.data.dim() == 3 else None)
    facts, grid = sliced.facts, sliced.grid
    note = facts.notes[0] if facts.notes else ""
    if sliced.prefix:
        axes = stage.axes
        note = _("query {i} {token} (, . change it): rows {rows}, columns {cols}").format(
            i=sliced.prefix[0], token=repr(axes[0].labels[sliced.prefix[0]]), rows=axis_title(axes[1].name),
            cols=axis_title(axes[2].name))
    meta = trace.meta
    if step is not None and grid.row_axis == "query" and \
            meta.missed(step, grid.row_labels[0]):
        grid = replace(grid, miss_rows=frozenset({0}))
    return StageView(stage.place, grid, str(stage.formula), shape_line(stage), note, sliced.prefix, sliced.vector)


@dataclass(frozen=True)
class StageSlice:
    """A stage (or one query's slice of a 3-D stage) as a grid, with the facts every view draws it with."""

    facts: StageFacts
    grid: Grid
    prefix: tuple[int, ...]  # the query a 3-D stage is sliced at
    vector: bool  # a 1-D stage lifted to one row


def stage_slice(trace: Trace, stage: Stage, query: int | None = None) -> StageSlice:
    """The grid of a stage as the app and the CLI both draw it; a 3-D stage at `query` (clamped)."""
    from attn_tui.trace.values import stats_of

    stats = stats_of(trace, stage)
    facts = stage_facts(stage, stats)
    axes = stage.axes
    prefix: tuple[int, ...] = ()
    data: torch.Tensor | LazyTensor = stage.data
    if stage.data.dim() == 3:
        at = max(0, min(query or 0, stage.shape[0] - 1))
        prefix = (at,)
        data, axes = stage.row(at), axes[1:]  # (S, hidden): one query's energy
    vector = data.dim() == 1
    rows: tuple[str, ...] = ("",) if vector else axes[0].labels
    row_axis = "" if vector else axes[0].name
    spec = trace.mask_of(stage)
    masked = None if spec is None or prefix else TiledCells(
        (spec.shape[0], spec.shape[1]), lambda r0, r1, c0, c1: (~spec.tile(slice(r0, r1), slice(c0, c1))).cpu().numpy(),
        dtype=bool)
    special = frozenset(trace.meta.special_tokens)  # a real model's [CLS], [SEP], …
    col_axis = axes[-1]
    grid = Grid(_cells(data[None, :] if vector else data), tuple(rows), tuple(col_axis.labels), row_axis,
                col_axis.name, masked, colour_scale=facts.colour_scale,
                special_rows=special if row_axis in TOKEN_AXES else frozenset(),
                special_cols=special if col_axis.name in TOKEN_AXES else frozenset(),
                stats=GridStats(*stats.finite_range, frozenset(stats.marks)),
                pad_cols=_pad_cols(spec, col_axis.name))
    return StageSlice(facts, grid, prefix, vector)


def _pad_cols(spec: MaskSpec | None, axis: str) -> frozenset[int]:
    """Keys the padding mask hides (their labels are struck through on a key axis)."""
    if spec is None or spec.padding is None or axis != "key":
        return frozenset()
    return frozenset(int(j) for j in spec.padding.nonzero().flatten().tolist())


def _cells(data: torch.Tensor | LazyTensor) -> np.ndarray | TiledCells:
    """Small 2-D data whole; larger data, or a lazy stage, as a source of tiles read when drawn."""
    from attn_tui.trace.lazy import LazyTensor  # a trace exists, so torch is loaded

    if isinstance(data, LazyTensor) or data.numel() > 1 << 14:
        return TiledCells((int(data.shape[0]), int(data.shape[1])),
                          lambda r0, r1, c0, c1: as_array(data[r0:r1, c0:c1]))
    return as_array(data)


def place_caption(trace: Trace, view: StageView, layer: int, head: int) -> str:
    """What the stage bar says about the place: the layer and head, or the decoder step and its output."""
    meta = trace.meta
    if meta.decoding is not None:
        return decoder_caption(trace, meta.decoding, view, layer, head)
    if meta.program is not None:
        return recorded_caption(trace, meta.program, view)
    if view.step is not None and isinstance(meta, GenerationRun):
        return token_caption(meta, view.step, None if view.place.layer is None else (layer, head))
    if view.step is not None and trace.step_axis is not None and trace.step_axis.kind == "state":
        return state_caption(trace, view.step, layer, head)
    if view.step is not None:  # flash: a step is a tile of keys
        return tile_caption(trace, view.step)
    if trace.layers > 1 and Place("implied", layer, head) in trace.stages:  # a linear-attention layer (Qwen3-Next)
        return _("{model}  layer {layer} head {head}").format(model=meta.title, layer=layer, head=head) + "  (" + \
            _("linear attention: a recurrent state that each query reads, no softmax") + ")"
    kv = meta.kv_map
    if kv and view.head is not None:
        shared = _("reads key/value head {kv}").format(kv=kv[view.head])
        if trace.layers > 1:
            return _("{model}  layer {layer} head {head}").format(model=meta.title, layer=layer, head=head) + \
                f"  ({shared})" + _layer_geometry(trace, layer)
        return _("head {head} of {n}").format(head=view.head, n=trace.heads) + f"  ({shared})"
    if trace.layers > 1:
        return _("{model}  layer {layer} head {head}").format(model=meta.title, layer=layer, head=head) + \
            _layer_geometry(trace, layer)
    return _("head {head} of {n}").format(head=view.head, n=trace.heads) if view.head is not None else ""


def _layer_geometry(trace: Trace, layer: int) -> str:
    """A model's layer on show, as its geometry says (its own window, rotary base, scale, cap), on its own line."""
    line = geometry_line(trace, layer)
    return "\n" + line if line else ""


def decoder_caption(trace: Trace, meta: DecoderRun, view: StageView, layer: int, head: int) -> str:
    """Which decoder step is on show, what it was fed and wrote (and whether it missed the target)."""
    forced = "  " + _("teacher-forced") if meta.teacher_forcing else ""
    where = ""
    if meta.layers > 1 or meta.heads > 1:  # the transformer: which layer and head is on show
        heads = str(Msg("mean of the heads")) if view.name == "alignment_mean" else str(Msg("head {head}",
                                                                                             head=head))
        where = str(Msg("  layer {layer}, {heads}", layer=layer, heads=heads))
        if view.place.module == "enc_attn":
            return str(Msg("encoder self-attention, before the first decoder step")) + where
    if view.step is None:
        return _("all {n} decoder steps → '{output}'").format(n=meta.steps, output=meta.output) + forced + where
    written = trace.query_tokens[view.step]
    caption = _("decoder step {t} of {n}: fed {fed}, writes {token}").format(
        t=view.step, n=meta.steps, fed=repr(meta.fed[view.step]) if view.step < len(meta.fed) else "?",
        token=repr(written))
    if meta.target is not None:
        wanted = meta.target[view.step] if view.step < len(meta.target) else "</s>"
        caption += "  " + (_("target {token} ✓") if not meta.missed(view.step, written)
                           else _("target {token} ✗")).format(token=repr(wanted))
    return caption + forced + where


def token_caption(meta: GenerationRun, step: int, at: tuple[int, int] | None) -> str:
    """Which token of a generation is on show: what the step fed, where, and what it wrote; `at`: the layer and
    head on show (None for the sampler's stages, after the last layer)."""
    wrote = meta.generated_tokens[step] if step < len(meta.generated_tokens) else "?"
    where = "" if at is None else str(Msg("  layer {layer}, {heads}", layer=at[0], heads=Msg("head {head}",
                                                                                            head=at[1])))
    prompt = len(meta.prompt_tokens)
    if step == 0:
        return _("token 0 of {n}: the prompt's {p} tokens read at once (the prefill), writes {token}").format(
            n=len(meta.generated_ids), p=prompt, token=repr(wrote)) + where
    return _("token {t} of {n}: fed {fed} at position {at}, one query over {keys} cached keys, writes {token}").format(
        t=step, n=len(meta.generated_ids), fed=repr(meta.generated_tokens[step - 1]), at=prompt + step - 1,
        keys=prompt + step, token=repr(wrote)) + where


def state_caption(trace: Trace, step: int, layer: int, head: int) -> str:
    """Which token a linear-attention state is after (the variant's, or a Qwen3-Next linear layer's)."""
    steps = trace.step_axis
    token = steps[step].new_keys[0] if steps is not None and step < len(steps) and steps[step].new_keys else "?"
    said = _("the state after token {t} of {n} ({token}): what it wrote, and everything before it").format(
        t=step, n=trace.steps(), token=token)
    return said + (_("  layer {layer}, head {head}").format(layer=layer, head=head) if trace.layers > 1 else "")


def tile_caption(trace: Trace, step: int) -> str:
    """Which tile of keys a flash step is: its number (from 0, as torch indexes) and the keys it reads (the keys
    its step adds to those seen before it)."""
    steps = trace.step_axis
    if steps is None or step >= len(steps):
        return str(Msg("step {step}", step=step))
    keys = steps[step].new_keys
    first = steps.seen(step) - len(keys)
    return _("key tile {n} of {tiles}: keys {first}…{last} ({labels})").format(
        n=step, tiles=trace.steps(), first=first, last=first + len(keys) - 1, labels=" ".join(keys))


def recorded_caption(trace: Trace, meta: RecordedRun, view: StageView) -> str:
    """Which module, call, batch item and head of the user's code the stage comes from (the trace's steps say
    which call and batch item a step is)."""
    parts = [view.place.module] if view.place.module else []
    if view.step is not None:
        steps = trace.step_axis  # named by one module's calls: said where that is the only module
        label = steps.label(view.step) if steps is not None and view.step < len(steps) and not view.place.module \
            else None
        parts.append(str(Msg("step {step}", step=view.step)) + ("" if label is None else f" ({label})"))
    if view.head is not None:
        parts.append(str(Msg("head {head} of {heads}", head=view.head, heads=meta.heads)))
    return "  ".join(parts)


def shape_line(stage: Stage) -> str:
    return "×".join(str(n) for n in stage.shape) + "  (" + " × ".join(axis_title(a.name) for a in stage.axes) + ")"


@dataclass(frozen=True)
class HeadsPanel:
    """The stage on show for every head of its layer: titled small grids, the one to highlight, a note,
    and the colour range they share (None: each head on its own range)."""

    grids: list[tuple[str, Grid]]
    current: int
    note: str
    shared: tuple[float, float] | None
    probability: bool
    colour_scale: ColourScale = "diverging"  # the stage kind's colour scale (trace.catalog)


def one_head_note() -> str:
    """What to pick for several heads: every variant that splits heads (from the registry), or a real model."""
    headed = ", ".join(name for name, variant in VARIANTS.items() if variant.has_heads)
    return _("one head here; several heads: {variants} (the heads setting), or a real model").format(variants=headed)


def heads_panel(trace: Trace, view: StageView, query: int, shared: bool = True) -> HeadsPanel:
    """Every head of the stage on show, on one colour scale unless `shared` is False.

    One scale is what makes heads comparable: weights on the fixed 0…1 of a probability,
    other stages on the range of all heads together. A head larger than SMALL_ROWS ×
    SMALL_COLS is drawn from evenly spaced rows and columns, read through the stage (for
    a lazy stage: only those rows are computed).
    """
    probability = view.grid.probability
    if view.head is None:
        note = one_head_note() if trace.heads == 1 else _("this stage is shared by all heads")
        return HeadsPanel([(view.name, small(view.grid))], 0, note, view.grid.finite_range() if shared else None,
                          probability, view.grid.colour_scale)
    place = view.place
    views = [stage_view(trace, view.name, place.layer, h, query, place.step, place.module)
             for h in range(trace.heads_at(place.layer))]  # the layer's own heads
    kv: tuple[int, ...] = getattr(trace.meta, "kv_map", ())  # grouped-query: the key/value head each head reads
    grids = [(_("head {h}").format(h=h) + (f" · kv {kv[h]}" if kv else ""), small(v.grid)) for h, v in enumerate(views)]
    sampled = grids[0][1].rows < view.grid.rows or grids[0][1].cols < view.grid.cols
    ranges = [v.grid.finite_range() for v in views]
    together = (0.0, 1.0) if probability else (min(lo for lo, _hi in ranges), max(hi for _lo, hi in ranges))
    return HeadsPanel(grids, view.head, _("every head drawn from evenly spaced rows and columns") if sampled else "",
                      together if shared else None, probability, view.grid.colour_scale)


def small(grid: Grid, rows: int = SMALL_ROWS, cols: int = SMALL_COLS) -> Grid:
    """`grid` itself when it fits rows × cols; else evenly spaced rows and columns of it, read by blocks."""
    if grid.rows <= rows and grid.cols <= cols:
        return grid
    import numpy as np

    pick_rows = np.unique(np.linspace(0, grid.rows - 1, min(rows, grid.rows)).round().astype(int))
    pick_cols = np.unique(np.linspace(0, grid.cols - 1, min(cols, grid.cols)).round().astype(int))
    values = np.stack([grid.block(int(i), int(i) + 1, 0, grid.cols)[0, pick_cols] for i in pick_rows])
    hidden = None
    if grid.masked is not None:
        hidden = np.stack([grid.masked_block(int(i), int(i) + 1, 0, grid.cols)[0, pick_cols]  # type: ignore[index]
                           for i in pick_rows])
    return Grid(values, tuple(grid.row_labels[i] for i in pick_rows), tuple(grid.col_labels[j] for j in pick_cols),
                grid.row_axis, grid.col_axis, hidden, grid.probability, stats=grid.stats,
                colour_scale=grid.colour_scale)


def overview(tensor: torch.Tensor, rows: int = PARAM_ROWS, cols: int = PARAM_COLS) -> tuple[torch.Tensor, str]:
    """A 2-D tensor cut down to at most rows × cols by block means, and a note saying how much."""
    import torch.nn.functional as F

    t = tensor.detach().float().cpu()
    if t.dim() == 1:
        t = t[None, :]  # (1, n)
    t = t.reshape(t.shape[0], -1)
    if t.shape[0] <= rows and t.shape[1] <= cols:
        return t, ""
    shape = (min(rows, t.shape[0]), min(cols, t.shape[1]))
    small = F.adaptive_avg_pool2d(t[None, None], shape)[0, 0]  # (rows, cols)
    return small, " " + _("(block means, {rows}×{cols} values a cell)").format(rows=f"{t.shape[0] / shape[0]:.3g}",
                                                                              cols=f"{t.shape[1] / shape[1]:.3g}")


def param_grids(trace: Trace) -> list[tuple[str, Grid]]:
    """Every learned parameter of the trace as a small grid; large ones as block-mean overviews.

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
