"""Grouped-query attention: H query heads share K key/value heads (K = 1: multi-query).

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.option import MAX_HEADS, whole
from attn_tui.ask.variant import Sizes, Variant
from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, NP_, Msg

KV_HEADS = whole("kv_heads", 1, 1, MAX_HEADS, "K", NP_("setting", "kv heads"),
                 N_("gqa: key/value heads shared by the query heads (must divide --heads; 1 = multi-query)"))


def _footprint(z: Sizes) -> dict[str, int]:
    d, n, h, kv = z.d_q, z.queries, z.heads, z.value("kv_heads")
    d_h = max(1, d // h)
    return {"parameters": 2 * d * d + 2 * kv * d_h * d, "projections": n * (d + 2 * kv * d_h),
            "score stages": 4 * h * n * n, "output": 3 * n * d}


def _check(z: Sizes) -> None:
    kv_heads, most = z.value("kv_heads"), int(KV_HEADS.high or MAX_HEADS)
    if not 1 <= kv_heads <= most:
        raise ConfigError(Msg("--kv-heads {kv}: attn-tui shows 1 to {most} heads", kv=kv_heads, most=most))


VARIANT = Variant(
    name="gqa", title="Grouped-query attention", order=80,
    stages=("q_proj", "k_proj", "v_proj", "query", "key", "value", "scores", "scaled", "masked", "weights", "output",
            "concat", "projected"),
    footprint=_footprint, takes_x=True, reads=("heads",), own=(KV_HEADS,), check=_check,
    explains={
        "key": N_(
        "This query head has no keys of its own: it reads the keys of its group's key/value head. The query "
        "heads of one group see the same keys and differ only in what they ask."),
        "value": N_(
        "The values are shared by the group in the same way. Heads of one group mix the same rows, each with "
        "its own weights."),
    },
)
