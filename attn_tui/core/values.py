"""Checks of every stage's values: an infinity or NaN is reported with its stage and cause, never silent."""

from __future__ import annotations

import torch

from attn_tui.core.ops import Masking
from attn_tui.core.stage import Stage, Trace


def _allowed(stage: Stage) -> torch.Tensor | None:
    """The cells a masked stage kept (True), or None when the stage is not masked."""
    op = stage.op
    return op.mask.allowed if isinstance(op, Masking) and op.mask is not None else None


def check_values(trace: Trace) -> None:
    """Report non-finite values, naming the stage and the cause (never a silent inf or NaN).

    One `isfinite` pass per stage in the common case; the counting and the reasons are
    only worked out for a stage that holds something non-finite.
    """
    overflowed: str | None = None  # the first stage that went infinite, blamed for later NaN
    for stage in trace:
        t = stage.tensor
        if not t.is_floating_point():
            continue
        temperature = stage.op.temperature if isinstance(stage.op, Masking) else 1.0
        if temperature != 1:
            _check_temperature(trace, stage, temperature)
        if bool(torch.isfinite(t).all()):
            continue
        nan = int(torch.isnan(t).sum())
        inf = torch.isinf(t)
        allowed = _allowed(stage)
        if allowed is not None:
            inf = inf & allowed.to(inf.device)  # a masked -inf is the fill, not an overflow
        n_inf = int(inf.sum())
        if n_inf:
            limit = torch.finfo(t.dtype).max
            cause = (f"dividing by the temperature {temperature:g} overflowed {t.dtype}" if temperature != 1
                     else f"{t.dtype} overflowed (its largest finite value is {limit:.4g})")
            trace.warn(f"stage {stage.key} has {n_inf} infinite value{'s' * (n_inf != 1)}: {cause}")
            overflowed = overflowed or stage.key
        if nan:
            cause = (f"they follow from the infinite values of stage {overflowed}" if overflowed
                     else "an undefined operation such as ∞ − ∞ or 0·∞")
            trace.warn(f"stage {stage.key} has {nan} NaN value{'s' * (nan != 1)}: {cause}")


def _check_temperature(trace: Trace, masked: Stage, temperature: float) -> None:
    """A huge temperature can flush every score to 0: say so rather than show uniform weights as meaningful."""
    op = masked.op
    assert isinstance(op, Masking)
    mask = _allowed(masked)
    kept = masked.tensor if mask is None else masked.tensor[mask.to(masked.tensor.device)]
    if kept.numel() and bool((kept == 0).all()) and bool((trace.stages[op.source].tensor != 0).any()):
        trace.warn(f"stage {masked.key}: dividing by the temperature {temperature:g} underflowed every score "
                   "to 0, so the weights are uniform")
