"""A masked stage's own mask in the JSON export: what the inspector says about it, in a form a script reads.

The header's `mask` is the variant's one mask. A recorded program (and a model whose layers mask differently)
gives each call's kernel its own mask: causal, a sliding window, padding keys, or a matrix no rule explains,
told "as the code gave it". So each masked stage carries its mask beside its data, shaped as the header's:
the parts (`MaskSpec.as_dict`), the reasons as fixed names, the words the app shows, and the whole 0/1 matrix
where the stage is small enough to hold whole (a lazy stage's mask stays its parts).
"""

from __future__ import annotations

import torch

from attn_tui.i18n import Msg
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.ops import Masking
from attn_tui.trace.stage import Stage, Trace

# The reasons a cell may be masked, as a script reads them (the inspector's "masked, …" lines, by kind).
REASONS = ("causal", "sliding_window", "padding", "custom", "mask_mod", "as_given")


def reasons(spec: MaskSpec) -> list[str]:
    """The kinds of reason the inspector gives for this mask's hidden cells, in the order it gives them (a causal
    sliding window gives two: a key ahead is "future key", one too far back "sliding window").

    `as_given`: no rule explains the matrix, so the inspector says what the code's mask holds at the cell.
    """
    found = (["causal"] if spec.causal else []) + (
        ["sliding_window"] if spec.window is not None else []) + (
        ["padding"] if spec.padding is not None else []) + (["custom"] if spec.custom is not None else [])
    if not found and spec.mod:
        found.append("mask_mod")
    if not found and (spec.dense is not None or spec.code_mask is not None):
        found.append("as_given")
    return found


def described(spec: MaskSpec) -> Msg:
    """The mask in the app's words: its parts ("sliding window 4 + padding"), or how the code gave it."""
    kinds = reasons(spec)
    if "mask_mod" in kinds:
        return Msg("mask_mod {name}", name=spec.mod)
    if kinds == ["as_given"]:
        return Msg("as the code gave it")
    return spec.describe()


def mask_entry(spec: MaskSpec, whole: bool) -> dict[str, object]:
    """One mask for the export: parts, reasons, words, convention; `whole`: the (L, S) 0/1 matrix too."""
    entry: dict[str, object] = spec.as_dict() | {
        "reasons": reasons(spec),
        "described": str(described(spec)),
        "convention": str(spec.convention()),
        "code_rule": spec.code_rule or None,
        "mask_mod": spec.mod or None,
    }
    if whole:
        entry["allowed"] = spec.allowed.to("cpu", torch.int64).tolist()  # 1 = may attend, as the header's
    return entry


def _own_mask(trace: Trace, stage: Stage) -> MaskSpec | None:
    op = stage.op
    if not isinstance(op, Masking) or op.mask is None or op.mask is trace.mask:
        return None
    return op.mask


def stage_mask(trace: Trace, stage: Stage) -> dict[str, object] | None:
    """The mask of a masked stage when it is its own (not the header's one `mask`), else None."""
    spec = _own_mask(trace, stage)
    return None if spec is None else mask_entry(spec, whole=not stage.lazy)


def mask_numbers(trace: Trace, stage: Stage) -> int:
    """How many numbers `stage_mask` writes for its matrix (for the export's size, checked before writing)."""
    spec = _own_mask(trace, stage)
    return 0 if spec is None or stage.lazy else spec.shape[0] * spec.shape[1]
