"""A layer's key/value cache after a generation step, as transformers' `DynamicCache` holds it: a stage per
key/value head, with what it costs and what a sliding window let fall out.

The keys are held after their rotation (what the next steps' queries meet); the newest rows are the ones this
step added. Its size is reported beside what full multi-head attention (a key and value head per query head,
every position kept) would hold, so grouped-query heads and sliding windows show what they save.
"""

from __future__ import annotations

from typing import Any

import torch

from attn_tui.ask.budget import format_bytes
from attn_tui.i18n import Msg
from attn_tui.trace.ops import Given, Place
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis


def cache_bytes(kv_heads: int, rows: int, d_h: int, itemsize: int) -> int:
    """Bytes of one layer's keys and values: 2 · kv_heads · rows · d_h numbers."""
    return 2 * kv_heads * rows * d_h * itemsize


def held(cache: Any, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(kv_heads, S, d_h) keys and values a DynamicCache holds for `layer` now. Its update concatenates into new
    tensors, so what is handed back stays as it is while the cache grows: each step keeps its own."""
    found = cache.layers[layer]
    return found.keys[0], found.values[0]


def record_cache(trace: Trace, kept: tuple[torch.Tensor, torch.Tensor], layer: int, step: int, window: int | None,
                 labels: tuple[str, ...], heads: int, evicted: int = 0) -> None:
    """Stages `cache_keys` and `cache_values` of each key/value head of `layer` at `step` (rows × d_h).

    `kept`: the layer's keys and values (kv_heads, S, d_h) as the cache held them after the step (`held`);
    `labels`: "position:token" of every position the step's keys were (the newest last); `evicted`: how many
    positions StreamingLLM's window had dropped by then (none: 0)."""
    keys, values = kept  # (kv_heads, S, d_h): what the next step will read (and its own row)
    n = len(labels)
    rows, kv, d_h = keys.shape[1], keys.shape[0], keys.shape[2]
    first = n - rows  # a sliding window keeps the last rows only: the first `first` fell out
    axis = Axis("key", labels[first:])
    size = cache_bytes(kv, rows, d_h, keys.element_size())
    full = cache_bytes(heads, n + evicted, d_h, keys.element_size())
    new = 1 if step else n  # the rows this step added (the prompt's at the prefill)
    fell: str | Msg = (Msg("; positions 0…{last} fell out of the window of {w}", last=first - 1, w=window)
                       if first > 0 else "")
    if evicted:
        fell = Msg("; StreamingLLM evicted {n} positions, its keys turned again at their places in the cache",
                   n=evicted)
    for name, tensor, letter in (("cache_keys", keys, "K"), ("cache_values", values, "V")):
        for g in range(kv):
            formula = Msg("{letter} cache of key/value head {g}, layer {layer}: {rows} rows × {d} (the last {new} "
                          "new at this step){fell}. The layer's cache holds {size} ({kv} key/value heads); full "
                          "multi-head attention over every position would hold {full}", letter=letter, g=g,
                          layer=layer, rows=rows, d=d_h, new=min(new, rows), fell=fell, size=format_bytes(size),
                          kv=kv, full=format_bytes(full))
            trace.add(Stage(Place(name, layer, g, step), tensor[g], formula, (axis, dim_axis(d_h)),
                            Given(Msg("held by transformers' DynamicCache after step {step}", step=step))))
