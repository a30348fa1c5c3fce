"""The tail every source shares: masked → weights → output, each recorded with the op that made it.

Variants, real transformers and trained decoders all end the same way, so the masking
rules, the float32 promotion, the empty-row handling, the formulas and the cell
explainers of these three stages exist here once. Scores for several heads at once are
handled in one batched pass; each head's stages are views of the batched tensors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from attn_tui.ask.footprint import PASS_ROWS
from attn_tui.i18n import Msg
from attn_tui.trace import masks
from attn_tui.trace.lazy import LazyTensor, PreTile, ScoreTiles
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.ops import Masking, Op, Place, SinkMass, Softmax, WeightedSum
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis
from attn_tui.trace.values import StageStats, fold_heads, fold_row_sums

SINK_WEIGHTS = Msg("A = softmax([M | s_h]) without its last column: each row sums to 1 − p_sink")
SINK_MASS = Msg("p_sink[i] = exp(s_h) / (Σ_k exp(M[i,k]) + exp(s_h)): what query i gave to the sink")
SINK_AXIS = Axis("sink", ("sink",))


@dataclass(frozen=True)
class Tail:
    """How the tail masks and what it calls its output."""

    query_axis: Axis
    key_axis: Axis
    mask: MaskSpec | None = None
    fill: str = "-inf"
    temperature: float = 1.0
    output: str = "output"  # "context" for a decoder's step
    output_formula: str | Msg = Msg("O = A·V: each row is a weighted sum of value rows")
    sink: torch.Tensor | None = None  # (heads,) a learned logit per head that joins each row's softmax
    sink_name: str = "sink"  # the parameter the sink logits are


def masked_formula(source: str, tail: Tail) -> Msg:
    scaled = f"{source} / T (T = {tail.temperature:g})" if tail.temperature != 1 else source
    if tail.mask is None:
        return Msg("M = {scaled}   (no mask)", scaled=scaled)
    if tail.mask.custom is not None and tail.mask.means == "block":  # typed the note's way: say both conventions
        return Msg("M = {scaled} where the typed mask = 0, {fill} where it = 1   (mask: {mask}; typed 1 = blocked, "
                   "shown as 1 = may attend)", scaled=scaled, fill=tail.fill.replace("inf", "∞"),
                   mask=tail.mask.describe())
    return Msg("M = {scaled} where mask = 1, {fill} where mask = 0   (mask: {mask}; 1 = may attend)", scaled=scaled,
               fill=tail.fill.replace("inf", "∞"), mask=tail.mask.describe())


def attend(trace: Trace, tail: Tail, scores: torch.Tensor, values: torch.Tensor,
           scores_at: Sequence[Place], values_at: Sequence[Place]) -> torch.Tensor:
    """Record masked, weights and output for each head; return the outputs (heads, L, d_v) or (L, d_v).

    scores (L, S) or (heads, L, S); values (S, d_v) or (heads, S, d_v); `scores_at[n]` and
    `values_at[n]` are the places of head n's scores and values.
    """
    batched = scores.dim() == 3
    scores_b = scores if batched else scores[None]  # (n, L, S)
    values_b = values if values.dim() == 3 else values[None]  # (n, S, d_v)
    allowed = None if tail.mask is None else tail.mask.allowed
    promoted = scores_b.to(masks.softmax_dtype(scores_b.dtype))
    divided = promoted / tail.temperature if tail.temperature != 1 else promoted
    masked = masks.apply_mask(divided, allowed, tail.fill)  # (n, L, S)
    sink_mass = None
    if tail.sink is None:
        weights = masks.masked_softmax(masked, allowed)  # (n, L, S)
    else:  # the sink joins each row as one more logit, then is dropped: rows sum to 1 − its share
        sinks = tail.sink.to(masked.device, masked.dtype)[:, None, None].expand(masked.shape[0], masked.shape[1], 1)
        both = torch.softmax(torch.cat([masked, sinks], dim=-1), dim=-1)  # (n, L, S + 1)
        weights, sink_mass = both[..., :-1], both[..., -1:]  # (n, L, S), (n, L, 1)
    output = weights.to(values_b.dtype) @ values_b  # (n, L, d_v)
    qk = (tail.query_axis, tail.key_axis)
    out_axes = (tail.query_axis, dim_axis(values_b.shape[-1]))
    for n, (at, value_at) in enumerate(zip(scores_at, values_at)):
        source = trace.stages[at].symbol
        trace.add(Stage(at.at("masked"), masked[n], masked_formula(source, tail), qk,
                        Masking(at, tail.mask, tail.fill, tail.temperature)))
        if sink_mass is None:
            trace.add(Stage(at.at("weights"), weights[n], WEIGHTS_FORMULA, qk,
                            Softmax(at.at("masked"))))
        else:
            trace.add(Stage(at.at("weights"), weights[n], SINK_WEIGHTS, qk,
                            Softmax(at.at("masked"), tail.sink_name, n)))
            trace.add(Stage(at.at("sink_mass"), sink_mass[n], SINK_MASS, (tail.query_axis, SINK_AXIS),
                            SinkMass(at.at("masked"), tail.sink_name, n)))
        trace.add(Stage(at.at(tail.output), output[n], tail.output_formula, out_axes,
                        WeightedSum(at.at("weights"), value_at)))
    warn_empty_rows(trace, tail)
    return output if batched else output[0]


def warn_empty_rows(trace: Trace, tail: Tail) -> None:
    for row in [] if tail.mask is None else tail.mask.empty_rows():
        label = repr(tail.query_axis.labels[row])
        if tail.sink is not None:
            trace.warn(Msg("query {label} (row {row}) may attend to no key: the sink takes its whole weight, so "
                           "its weights and output are zeros", label=label, row=row))
        elif tail.fill == "-inf":
            trace.warn(Msg("query {label} (row {row}) may attend to no key: with fill -inf its weights and output "
                           "are zeros, as SDPA returns; a plain softmax (F.softmax, nn.Softmax) would give NaN here",
                           label=label, row=row))
        else:
            trace.warn(Msg("query {label} (row {row}) may attend to no key: with fill {fill} its weights are "
                           "uniform over all keys", label=label, row=row, fill=tail.fill))


WEIGHTS_FORMULA = Msg("A = softmax(M) over keys: each row sums to 1")


@dataclass(frozen=True)
class PreStage:
    """A stage before the mask, as a variant declares it: its name, formula, axes and op (given the place)."""

    name: str
    formula: str | Msg
    axes: tuple[Axis, ...]
    op: Callable[[Place], Op]


def score_stages(trace: Trace, tail: Tail, pre: PreTile, stages: Sequence[PreStage], last: str,
                 values: torch.Tensor, scores_at: Sequence[Place], values_at: Sequence[Place],
                 lazy: bool) -> torch.Tensor:
    """The score stages of every head, then the tail; returns the outputs (heads, L, d_v).

    `pre(rows, cols)` computes the stages before the mask on any tile for every head:
    called once on everything for a short input (whole stages, the batched tail), or
    tile by tile for a long one (lazy stages, one streaming pass for the outputs).
    `scores_at[n]` places head n; `values` is (heads, S, d_v).
    """
    shape = (len(tail.query_axis.labels), len(tail.key_axis.labels))
    if not lazy:
        whole = pre(slice(None), slice(None))  # stage name → (heads, L, S)
        for n, at in enumerate(scores_at):
            for stage in stages:
                trace.add(Stage(at.at(stage.name), whole[stage.name][n], stage.formula, stage.axes,
                                stage.op(at.at(stage.name))))
        return attend(trace, tail, whole[last], values, [at.at(last) for at in scores_at], values_at)
    tiles = ScoreTiles(pre, last, shape, tail.mask, tail.fill, tail.temperature)
    sample = pre(slice(0, 1), slice(0, 1))  # one cell tells the dtypes and the hidden width
    for n, at in enumerate(scores_at):
        for stage in stages:
            tile = sample[stage.name]
            trace.put(Stage(at.at(stage.name), LazyTensor(tiles, stage.name, n, shape + tuple(tile.shape[3:]),
                                                          tile.dtype, tile.device),
                            stage.formula, stage.axes, stage.op(at.at(stage.name))))
    return stream(trace, tail, tiles, [s.name for s in stages], values, scores_at, values_at)


GPU_PASS_CELLS = 1 << 24  # cells of one block on a GPU: 64 MiB of float32 per temporary


def softmax_rows(masked: torch.Tensor, sink: torch.Tensor | None = None
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """A block of rows' softmax written out, so that each row's log-sum-exp comes for free: lse = max + log Σ exp(x −
    max). masked (..., b, S); a sink logit (..., b) always joins its row. Rows with nothing to attend (all -inf) get
    weights 0 and lse -inf. Returns weights (..., b, S) and, per row, lse, the row's max, the shift, the sum, empty."""
    top = masked.amax(dim=-1)
    peak = top if sink is None else torch.maximum(top, sink)
    empty = torch.isneginf(peak)
    shift = peak.masked_fill(empty, 0.0)
    weights = (masked - shift[..., None]).exp_()
    total = weights.sum(dim=-1)
    if sink is not None:
        total = total + torch.exp(sink - shift)
    weights.div_(total[..., None])
    if bool(empty.any()):
        weights.masked_fill_(empty[..., None], 0.0)
    return weights, (shift + total.log()).masked_fill(empty, -torch.inf), top, shift, total, empty


def pass_rows(device: torch.device, heads: int, keys: int) -> int:
    """Query rows per block of the streaming pass: PASS_ROWS on the CPU (what the budget counts); on a GPU as
    many as fit GPU_PASS_CELLS, up to 16 times more, since each block costs a few waits for the GPU (its stats
    are read back) and a GPU is fastest on large blocks."""
    if device.type == "cpu":
        return PASS_ROWS
    return max(PASS_ROWS, min(16 * PASS_ROWS, GPU_PASS_CELLS // max(1, heads * keys)))


def stream(trace: Trace, tail: Tail, tiles: ScoreTiles, names: Sequence[str], values: torch.Tensor,
           scores_at: Sequence[Place], values_at: Sequence[Place]) -> torch.Tensor:
    """One pass over blocks of query rows: the outputs, every row's log-sum-exp, and every stage's stats.

    Nothing (L, S) is ever held: a block of PASS_ROWS rows is computed, folded into the
    outputs and the stats, and dropped. The masked and weights stages are then lazy
    too, read through the log-sum-exp the pass kept.
    """
    rows_total, _ = tiles.shape
    heads = len(scores_at)
    dtype = masks.softmax_dtype(values.dtype)
    outputs = torch.empty(heads, rows_total, values.shape[-1], dtype=values.dtype, device=values.device)
    lse = torch.empty(heads, rows_total, dtype=dtype, device=values.device)
    stats = {name: [StageStats() for _ in range(heads)] for name in (*names, "masked", "weights")}
    sink = None if tail.sink is None else tail.sink.to(values.device, dtype)[:, None]  # (heads, 1)
    sink_mass = None if sink is None else torch.empty(heads, rows_total, 1, dtype=dtype, device=values.device)
    step = pass_rows(values.device, heads, tiles.shape[1])
    for start in range(0, rows_total, step):
        rows = slice(start, min(rows_total, start + step))
        pre = tiles.pre(rows, slice(None))
        masked = tiles.masked(pre[tiles.last], rows, slice(None))  # (heads, b, S)
        kept = None if tiles.mask is None else tiles.mask.tile(rows, slice(None))
        bottom = masked.amin(dim=-1)  # (heads, b) (aminmax with dim is slower)
        weights, lse[:, rows], top, shift, total, _ = softmax_rows(masked, sink)
        outputs[:, rows] = weights.to(values.dtype) @ values
        if sink is not None and sink_mass is not None:
            sink_mass[:, rows, 0] = torch.exp(sink - shift) / total
        # Every stage's range from what softmax needed anyway: a row's weights span exp(min − max)/Σ … 1/Σ.
        for name in names:
            if pre[name] is not masked:  # the masked stage is this very tensor when nothing is masked
                fold_heads(stats[name], pre[name])
        fold_heads(stats["masked"], masked, kept, (bottom, top))
        fold_heads(stats["weights"], weights, kept, (torch.exp(bottom - shift) / total, torch.exp(top - shift) / total))
        blank = torch.isneginf(top)  # rows the mask leaves nothing (with a sink, it takes their whole weight)
        fold_row_sums(stats["weights"], weights, start, blank, None if sink_mass is None else sink_mass[:, rows, 0])
    tiles.lse = lse
    qk = (tail.query_axis, tail.key_axis)
    out_axes = (tail.query_axis, dim_axis(values.shape[-1]))
    source = trace.stages[scores_at[0].at(tiles.last)].symbol
    for n, (at, value_at) in enumerate(zip(scores_at, values_at)):
        last = at.at(tiles.last)
        trace.put(Stage(at.at("masked"), LazyTensor(tiles, "masked", n, tiles.shape, dtype, values.device),
                        masked_formula(source, tail), qk, Masking(last, tail.mask, tail.fill, tail.temperature)))
        if sink_mass is None:
            trace.put(Stage(at.at("weights"), LazyTensor(tiles, "weights", n, tiles.shape, dtype, values.device),
                            WEIGHTS_FORMULA, qk, Softmax(at.at("masked"))))
        else:
            trace.put(Stage(at.at("weights"), LazyTensor(tiles, "weights", n, tiles.shape, dtype, values.device),
                            SINK_WEIGHTS, qk, Softmax(at.at("masked"), tail.sink_name, n)))
            trace.add(Stage(at.at("sink_mass"), sink_mass[n], SINK_MASS, (tail.query_axis, SINK_AXIS),
                            SinkMass(at.at("masked"), tail.sink_name, n)))
        trace.add(Stage(at.at(tail.output), outputs[n], tail.output_formula, out_axes,
                        WeightedSum(at.at("weights"), value_at)))
        for name, found in stats.items():
            same = name == tiles.last and stats[name][n].lo > stats[name][n].hi  # never folded: it is `masked`
            trace.stats[at.at(name)] = stats["masked"][n] if same else found[n]
    warn_empty_rows(trace, tail)
    return outputs
