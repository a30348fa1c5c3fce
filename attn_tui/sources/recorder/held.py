"""What a recording holds in memory, so that `trace --max-memory` bounds it: the calls it keeps, and the stages
it lays them out into.

Plain Python frees a call's tensors when the code drops them; the recorder keeps the last
calls of each module alive, and lays an SDPA call out into scores, scaled, masked and
weights that the fused kernel never made. Both are counted here, before they are allocated
where they can be, so a recording that would outgrow the limit stops with one line.
"""

from __future__ import annotations

import contextlib
import math

import torch

from attn_tui.ask.budget import BudgetError, format_bytes
from attn_tui.i18n import Msg
from attn_tui.sources.recorder.node import Node, walk

LAID_OUT = 5  # (L, S) tensors per head an SDPA or MultiheadAttention call becomes: scores, scaled, masked, weights,
# and a float64 pass of the value checks


def held_bytes(node: Node, limit: int = 2000) -> int:
    """The bytes of every tensor an anchor's graph keeps alive, each storage once; the module's own parameters
    are not counted (the model holds them anyway). A tensor the code dropped stays alive while its call is kept,
    which is why a loop of attention calls can hold far more under the recorder than without it."""
    storages: dict[int, int] = {}
    for current in walk([node], limit=limit):
        if current.is_param:
            continue
        returned = current.returned if isinstance(current.returned, tuple) else ()
        for value in (current.value, *(r for r in returned if isinstance(r, torch.Tensor))):
            with contextlib.suppress(RuntimeError):  # a tensor without storage (meta, sparse) holds no bytes here
                storage = value.untyped_storage()
                storages[storage.data_ptr()] = max(storages.get(storage.data_ptr(), 0), storage.nbytes())
    return sum(storages.values())


def _shape(node: Node, at: int, name: str) -> tuple[int, ...] | None:
    arg = node.inputs[at] if at < len(node.inputs) else node.kwargs.get(name)
    return tuple(arg.value.shape) if isinstance(arg, Node) else None


def laid_out_bytes(node: Node) -> int:
    """Bytes the layout of one fused call will allocate: LAID_OUT (L, S) tensors for each batch item and head,
    in at least float32. A softmax the code wrote itself already holds its scores: it is counted as kept."""
    if node.name == "scaled_dot_product_attention":
        q, k = _shape(node, 0, "query"), _shape(node, 1, "key")
        if q is None or k is None or len(q) < 2 or len(k) < 2:
            return 0
        try:
            lead = torch.broadcast_shapes(q[:-2], k[:-2]) if len(q) > 2 or len(k) > 2 else ()  # type: ignore[no-untyped-call]
        except RuntimeError:  # enable_gqa: fewer key heads than query heads, each serving several
            lead = q[:-2]
        cells = math.prod(lead) * q[-2] * k[-2]
        from attn_tui.sources.recorder.sdpa_lazy import LAZY_CELLS as SDPA_LAZY

        if cells > SDPA_LAZY:  # laid out by tiles (sdpa_lazy.py): a block of rows at a time, never whole
            return 0
    elif node.name == "multi_head_attention_forward":
        q, k = _shape(node, 0, "query"), _shape(node, 1, "key")
        given = node.inputs[4] if len(node.inputs) > 4 else node.kwargs.get("num_heads")
        heads = given if isinstance(given, int) and not isinstance(given, bool) and given > 0 else 1
        if q is None or k is None or len(q) < 2 or len(k) < 2:
            return 0
        batch = q[1] if len(q) == 3 else 1
        cells = batch * heads * q[0] * k[0]
    elif node.name == "flex_attention":  # laid out whole up to flex_lazy.LAZY_CELLS scores; past that, by tiles
        from attn_tui.sources.recorder.hooks.flex_lazy import LAZY_CELLS

        q, k = _shape(node, 0, "query"), _shape(node, 1, "key")
        if q is None or k is None or len(q) != 4 or len(k) != 4:
            return 0
        cells = q[0] * q[1] * q[2] * k[2]
        if cells > LAZY_CELLS:
            return 0
        cells += cells // 2  # the score_mod's and the mask_mod's own values beside the five
    else:
        return 0
    itemsize = max(4, node.value.element_size())
    return LAID_OUT * cells * itemsize


def over_budget(script: str, needed: int, budget: int) -> BudgetError:
    """The one line a recording that outgrows `--max-memory` ends with."""
    return BudgetError(Msg("{script}: its recording would hold {size}, more than --max-memory allows ({limit}); "
                           "--max-calls N keeps fewer calls", script=script, size=format_bytes(needed),
                           limit=format_bytes(budget)))
