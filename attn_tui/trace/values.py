"""What every stage holds at a glance, gathered in one pass: its finite range, its non-finite cells, its marks.

The same numbers serve the colour scale, the legend, the row-sum check and the warnings,
so a view never walks a stage again; an infinity or NaN is always reported with its
stage and cause, never silent. Lazy stages gather them block by block in the streaming
pass; a whole stage in one `aminmax` when it holds nothing unusual.
"""

from __future__ import annotations

import math

import torch

from attn_tui.i18n import Msg, Plural
from attn_tui.trace.ops import Given, Masking, Softmax
from attn_tui.trace.stage import Stage, Trace
from attn_tui.trace.stage_stats import StageStats as StageStats
from attn_tui.trace.stage_stats import worse


def stats_of(trace: Trace, stage: Stage) -> StageStats:
    """The stage's stats: gathered by the streaming pass for a lazy stage, else in one pass now (and kept)."""
    found = trace.stats.get(stage.place)
    if found is None:
        found = StageStats()
        tensor = stage.tensor
        masking = trace.masking(stage)
        kept = None if masking is None or masking.mask is None or stage.lazy else masking.mask.allowed
        if tensor.is_floating_point():
            found.add(tensor, kept if kept is not None and kept.shape == tensor.shape else None)
        if stage.name == "weights" and tensor.dim() == 2:
            empty = (~kept.any(dim=-1)) if kept is not None else torch.zeros(tensor.shape[0], dtype=torch.bool)
            sink = trace.stages.get(stage.place.at("sink_mass")) if isinstance(stage.op, Softmax) and \
                stage.op.sink else None
            found.add_row_sums(tensor, 0, empty, share=None if sink is None else sink.tensor[:, 0])
        trace.stats[stage.place] = found
    return found


def check_values(trace: Trace) -> None:
    """Report non-finite values, naming the stage and the cause (never a silent inf or NaN)."""
    infinite: dict[tuple[int | None, int | None], str] = {}  # the first stage of each place that went infinite
    undefined: dict[tuple[int | None, int | None], str] = {}  # … that went NaN with no infinity before it
    for stage in trace:
        stats = stats_of(trace, stage)
        temperature = stage.op.temperature if isinstance(stage.op, Masking) else 1.0
        if temperature != 1 and stats.zero and stats.lo <= stats.hi and isinstance(stage.op, Masking):
            source = stats_of(trace, trace.stages[stage.op.source])
            if not source.zero:
                trace.warn(Msg("stage {stage}: dividing by the temperature {temperature} underflowed every score to 0, "
                               "so the weights are uniform", stage=stage.key, temperature=f"{temperature:g}"))
        # A running max is −∞ until its row has seen a key it may attend: that is the online softmax's start.
        n_inf = stats.posinf + (0 if stage.op.starts_infinite else stats.neginf)
        overflowed = _earlier(infinite, stage)
        if n_inf:
            dtype = stage.data.dtype
            limit = torch.finfo(dtype).max if dtype.is_floating_point else math.inf
            cause = (Msg("they follow from the infinite values of stage {stage}", stage=overflowed) if overflowed
                     else Msg("dividing by the temperature {temperature} overflowed {dtype}",
                              temperature=f"{temperature:g}", dtype=dtype) if temperature != 1
                     else Msg("{dtype} overflowed (its largest finite value is {limit})", dtype=dtype,
                              limit=f"{limit:.4g}"))
            trace.warn(Plural("stage {stage} has {n} infinite value: {cause}", "stage {stage} has {n} infinite values: "
                              "{cause}", stage=stage.key, n=n_inf, cause=cause))
            infinite.setdefault((stage.layer, stage.head), stage.key)
            overflowed = overflowed or stage.key
        if stats.nan:
            cause = _nan_cause(stage, overflowed, _earlier(undefined, stage))
            undefined.setdefault((stage.layer, stage.head), stage.key)
            trace.warn(Plural("stage {stage} has {n} NaN value: {cause}", "stage {stage} has {n} NaN values: {cause}",
                              stage=stage.key, n=stats.nan, cause=cause))


def _earlier(found: dict[tuple[int | None, int | None], str], stage: Stage) -> str | None:
    """The first stage that went bad on the way to `stage`: in its own head, before the heads split, or (for a stage
    that gathers the heads) in any head."""
    for place in ((stage.layer, stage.head), (stage.layer, None), (None, None)):
        if place in found:
            return found[place]
    return next(iter(found.values()), None) if stage.head is None else None


def _nan_cause(stage: Stage, overflowed: str | None, undefined: str | None) -> Msg:
    """Why a stage holds NaN: values given so, an earlier stage's, or an overflow inside this stage's own sums.

    Typed inputs are refused unless finite and learned parameters are seeded, so a computed
    stage whose every earlier stage is finite can only get a NaN from ∞ − ∞ or 0·∞ between
    partial results its dtype could not hold: the overflow is named, not just the NaN.
    """
    if isinstance(stage.op, Given):
        return Msg("they were in the input as given")
    if overflowed:
        return Msg("they follow from the infinite values of stage {stage}", stage=overflowed)
    if undefined:
        return Msg("they follow from the NaN values of stage {stage}", stage=undefined)
    dtype = stage.data.dtype
    if not dtype.is_floating_point:
        return Msg("an undefined operation such as ∞ − ∞ or 0·∞")
    return Msg("{dtype} overflowed inside this stage (its largest finite value is {limit}), and ∞ − ∞ or 0·∞ is "
               "undefined: smaller inputs or a wider --dtype keep it finite", dtype=dtype,
               limit=f"{torch.finfo(dtype).max:.4g}")


def fold_heads(found: list[StageStats], block: torch.Tensor, kept: torch.Tensor | None = None,
               rows: tuple[torch.Tensor, torch.Tensor] | None = None) -> None:
    """Fold a block of every head (heads, …) into each head's stats with one reduction for all heads.

    `rows` gives each row's (min, max), (heads, rows), when the caller has them already.
    Heads with anything non-finite, or masked cells, take the exact per-cell path.
    """
    heads = block.shape[0]
    if kept is None:
        if rows is not None:
            lo, hi = rows[0].amin(dim=-1), rows[1].amax(dim=-1)
        else:
            flat = block.reshape(heads, -1)
            lo, hi = flat.amin(dim=-1), flat.amax(dim=-1)  # two reductions beat aminmax(dim=…) several-fold
        los, his = lo.tolist(), hi.tolist()
        for n in range(heads):
            if math.isfinite(los[n]) and math.isfinite(his[n]):
                found[n].add_finite(los[n], his[n])
            else:
                found[n].add(block[n])
        return
    for n in range(heads):
        found[n].add(block[n], kept)


def fold_row_sums(found: list[StageStats], weights: torch.Tensor, first_row: int, empty: torch.Tensor,
                  sink: torch.Tensor | None = None) -> None:
    """Each head's row sums of a block of weights (heads, rows, keys), in the weights' own dtype.

    `sink` (heads, rows), when a sink took part of each row: the rows then sum to 1 − sink.
    """
    sums = weights.sum(dim=-1) if sink is None else weights.sum(dim=-1) + sink  # (heads, rows)
    deviation = (sums - 1).abs().masked_fill(empty, 0.0).amax(dim=-1).tolist()
    any_empty = bool(empty.any())
    for n in range(weights.shape[0]):
        found[n].row_deviation = worse(found[n].row_deviation, deviation[n])
        if any_empty:
            found[n].empty_rows += [first_row + int(i) for i in torch.nonzero(empty[n]).flatten().tolist()]
