"""A mask a kernel was given, told by its reasons: causal order, a sliding window, padding keys.

SDPA gets a model's mask as one matrix (or just `is_causal=True`); the inspector should say
*why* a cell is hidden, as it does for the variants. The parts are guessed from the matrix
and kept only when they rebuild it exactly; otherwise the matrix is shown whole, as given.
"""

from __future__ import annotations

import torch

from attn_tui.trace.masks import MaskSpec


def mask_key(allowed: torch.Tensor) -> tuple[object, ...]:
    """What identifies one slice's mask numbers: slices that read the same storage the same way share their parts."""
    return allowed.data_ptr(), allowed.storage_offset(), tuple(allowed.stride()), tuple(allowed.shape)


def by_parts(allowed: torch.Tensor) -> MaskSpec | None:
    """The MaskSpec of causal / window / padding parts that equals `allowed` (L, S) exactly, or None.

    The matrix is kept too (`dense`): the parts say why a cell is hidden, the matrix what the kernel read.

    Tried: causal (key j ≤ query i), a window (j > i − w, w the widest reach of any row),
    padding keys (columns no query may read); each kept only when the whole matrix agrees.
    """
    length, keys = allowed.shape
    if length == 0 or keys == 0 or bool(allowed.all()):
        return None
    allowed = allowed.cpu()
    rows = torch.arange(length)[:, None]  # (L, 1)
    cols = torch.arange(keys)[None, :]  # (1, S)
    read = allowed.any(dim=0)  # (S,) keys some query may read
    padding = None if bool(read.all()) else ~read
    causal = bool((allowed & (cols > rows)).any()) is False and length == keys
    window = None
    if causal:
        reach = torch.where(allowed, rows - cols, torch.full_like(allowed, -1, dtype=torch.long))  # (L, S)
        widest = int(reach.amax())
        if widest + 1 < keys:
            window = widest + 1
    for pad in ((padding, None) if padding is not None else (None,)):
        for win in ((None, window) if window is not None else (None,)):  # no window when causal alone explains it
            if not causal and win is None and pad is None:
                continue
            spec = MaskSpec((length, keys), causal=causal, padding=pad, window=win)
            if torch.equal(spec.allowed, allowed):
                return MaskSpec((length, keys), causal=causal, padding=pad, window=win, dense=allowed)
    return None
