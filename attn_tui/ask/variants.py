"""The registry of attention variants: name → stages, shape rules, memory footprint and run function.

Torch-free: the CLI and the app read it (to list stages, to budget memory) before torch
has loaded; a variant's module, which does the computing, is imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_tui.ask.settings import Settings


@dataclass(frozen=True)
class Sizes:
    """The sizes a request implies: L queries, S keys, widths, heads, attention hidden size."""

    queries: int
    keys: int
    d_q: int
    d_k: int
    d_v: int
    hidden: int
    heads: int = 1
    kv_heads: int = 1  # gqa: key/value heads
    tile: int = 1  # flash: keys per tile


@dataclass(frozen=True)
class Variant:
    """One variant: its stage names (after the input stages), its rules and its run function.

    A variant that splits heads (`per_head`) ends with `concat` only when it has several.

    `same_width`: Q and K must share their last dimension (no learned projection
    between them). `takes_x`: projects Q, K, V itself from one X (multihead, gqa).
    `per_head`: splits Q, K, V into `--heads` heads by columns (alibi, sink).
    `options`: the settings only this variant reads (`heads`, `kv_heads`, `rope_base`, `tile`).
    `lazy`: its score stages can be read by tiles, so it runs on inputs of any length.
    `score_based`: takes a soft cap, a QK-norm and the output gate (not additive, concat, flash, linear).
    `footprint`: the numbers each of its stages and parameters holds, by part.
    """

    name: str
    title: str
    stages: tuple[str, ...]
    footprint: Callable[[Sizes], dict[str, int]]
    same_width: bool = True
    takes_x: bool = False
    uses_hidden: bool = False  # --dim sets its attention hidden size even for typed Q, K, V
    learned: bool = True  # has seeded parameters of its own, even on typed Q, K, V
    per_head: bool = False
    options: tuple[str, ...] = ()
    lazy: bool = True
    score_based: bool = True  # its scores are q·k: --softcap, --qk-norm and --gate apply (attention/variants/modifiers)

    @property
    def has_heads(self) -> bool:
        """Several heads, chosen with --heads and shown one by one."""
        return self.takes_x or self.per_head

    @property
    def run(self) -> Callable[..., object]:
        module = importlib.import_module(f"attn_tui.attention.variants.{self.name}")
        return module.run  # type: ignore[no-any-return]


def _tail(z: Sizes, score_stages: int) -> dict[str, int]:
    """The score stages (scores … weights) and the output."""
    return {"score stages": score_stages * z.queries * z.keys, "output": z.queries * z.d_v}


def _additive(z: Sizes) -> dict[str, int]:
    return _tail(z, 3) | {"parameters": z.hidden * (z.d_q + z.d_k + 1),
                          "projections": (z.queries + z.keys) * z.hidden,
                          "energy": 2 * z.queries * z.keys * z.hidden}  # the sum, then its tanh


def _concat(z: Sizes) -> dict[str, int]:
    return _tail(z, 3) | {"parameters": z.hidden * (z.d_q + z.d_k + 1),
                          "pairs [q; k]": z.queries * z.keys * (z.d_q + z.d_k),
                          "energy": 2 * z.queries * z.keys * z.hidden}


def _multihead(z: Sizes) -> dict[str, int]:
    d, n = z.d_q, z.queries
    return {"parameters": 4 * d * d + 4 * d, "qkv_proj": 3 * n * d, "score stages": 4 * z.heads * n * n,
            "output": 3 * n * d}


def _gqa(z: Sizes) -> dict[str, int]:
    d, n, h, kv = z.d_q, z.queries, z.heads, z.kv_heads
    d_h = max(1, d // h)
    return {"parameters": 2 * d * d + 2 * kv * d_h * d, "projections": n * (d + 2 * kv * d_h),
            "score stages": 4 * h * n * n, "output": 3 * n * d}


def _split(z: Sizes, score_stages: int) -> dict[str, int]:
    """A variant that splits Q, K, V into heads: every head's score stages, the outputs and their concat."""
    return {"score stages": score_stages * z.heads * z.queries * z.keys, "output": 2 * z.queries * z.d_v}


def _mla(z: Sizes) -> dict[str, int]:
    """Multi-head latent attention's sizes as attention/variants/mla.py draws them from d and H."""
    d, n, h = z.d_q, z.queries, z.heads
    d_h = max(1, d // h)
    d_r, q_r, kv_r = max(2, 2 * (d_h // 4)), max(1, d // 2), max(1, d // 4)
    return {"parameters": q_r * d + h * (d_h + d_r) * q_r + (kv_r + d_r) * d + 2 * h * d_h * kv_r + d * h * d_h,
            "projections": n * (2 * q_r + h * (3 * d_h + 2 * d_r) + 2 * kv_r + 3 * d_r + h * (2 * d_h + d_r)),
            "score stages": 4 * h * n * n, "output": 3 * n * d}


def _flash(z: Sizes) -> dict[str, int]:
    tiles = -(-z.keys // max(1, z.tile))
    return {"tile stages": z.queries * z.keys + tiles * z.queries * (3 + z.d_v), "output": z.queries * z.d_v}


def _diff(z: Sizes) -> dict[str, int]:
    """Two score families (scores, scaled, masked, weights each) and their difference, per head."""
    return {"score stages": 9 * z.heads * z.queries * z.keys, "parameters": 2 * z.d_q,
            "halves and outputs": 2 * (z.queries + z.keys) * z.d_q + 3 * z.queries * z.d_v}


def _linear(z: Sizes) -> dict[str, int]:
    """A state (d_k × d_v) per step, the implied matrix, the normed q and k, decay and β, the output."""
    return {"parameters": 2 * z.d_q + 2, "states": z.queries * z.d_k * z.d_v, "implied": z.queries * z.keys,
            "normed q and k": 2 * z.queries * z.d_k, "decay and beta": 2 * z.queries, "output": z.queries * z.d_v}


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("dot", "Dot product", ("query", "key", "value", "scores", "masked", "weights", "output"),
                lambda z: _tail(z, 3), learned=False),
        Variant("scaled_dot", "Scaled dot product",
                ("query", "key", "value", "scores", "scaled", "masked", "weights", "output"),
                lambda z: _tail(z, 4), learned=False),
        Variant("general", "Luong general (bilinear)",
                ("query", "key", "value", "query_proj", "scores", "masked", "weights", "output"),
                lambda z: _tail(z, 3) | {"parameters": z.d_k * z.d_q, "query_proj": z.queries * z.d_k},
                same_width=False),
        Variant("additive", "Bahdanau additive",
                ("query", "key", "value", "query_proj", "key_proj", "energy", "scores", "masked", "weights",
                 "output"), _additive, same_width=False, uses_hidden=True, score_based=False),
        Variant("concat", "Concat", ("query", "key", "value", "energy", "scores", "masked", "weights", "output"),
                _concat, same_width=False, uses_hidden=True, score_based=False),
        Variant("multihead", "Multi-head",
                ("qkv_proj", "query", "key", "value", "scores", "scaled", "masked", "weights", "output", "concat",
                 "projected"), _multihead, takes_x=True, options=("heads",)),
        Variant("rope", "Rotary positions (RoPE)",
                ("query", "key", "value", "query_rot", "key_rot", "scores", "scaled", "masked", "weights", "output"),
                lambda z: _tail(z, 4) | {"rotated q and k": (z.queries + z.keys) * z.d_q}, learned=False,
                options=("rope_base",)),
        Variant("gqa", "Grouped-query attention",
                ("q_proj", "k_proj", "v_proj", "query", "key", "value", "scores", "scaled", "masked", "weights",
                 "output", "concat", "projected"), _gqa, takes_x=True, options=("heads", "kv_heads")),
        Variant("alibi", "ALiBi (linear distance bias)",
                ("query", "key", "value", "scores", "scaled", "bias", "biased", "masked", "weights", "output",
                 "concat"),
                lambda z: _split(z, 6), learned=False, per_head=True, options=("heads",)),
        Variant("sink", "Attention sink (learned logit)",
                ("query", "key", "value", "scores", "scaled", "masked", "weights", "sink_mass", "output", "concat"),
                lambda z: _split(z, 4) | {"sink_mass": z.heads * z.queries}, per_head=True, options=("heads",)),
        Variant("flash", "Flash (online softmax by key tiles)",
                ("query", "key", "value", "tile_scores", "running_max", "rescale", "denominator", "accumulator",
                 "output"), _flash, learned=False, options=("tile",), lazy=False,
                score_based=False),
        Variant("mla", "Multi-head latent attention (DeepSeek)",
                ("q_latent", "q_latent_norm", "query", "query_nope", "query_rope", "query_rot", "kv_latent",
                 "kv_latent_norm", "key_rope", "key_rot", "latent_cache", "value", "key_nope", "key",
                 "query_absorbed", "scores", "scaled", "masked", "weights", "output", "concat", "projected"),
                _mla, takes_x=True, options=("heads", "rope_base", "absorbed")),
        Variant("diff", "Differential (two maps, one minus the other)",
                ("query", "key", "value", "query_1", "query_2", "key_1", "key_2", "scores_1", "scaled_1", "masked_1",
                 "weights_1", "scores_2", "scaled_2", "masked_2", "weights_2", "lambda", "diff_weights",
                 "diff_output", "head_norm", "concat"), _diff, per_head=True, options=("heads", "depth")),
        Variant("linear", "Linear attention (recurrent state)",
                ("query", "key", "value", "query_l2", "key_l2", "decay", "beta", "state", "implied", "output"),
                _linear, options=("rule",), lazy=False, score_based=False),
    )
}


def modifier_parts(settings: Settings, z: Sizes) -> dict[str, int]:
    """What a soft cap, a QK-norm and the output gate add to a score-based variant's footprint, by part."""
    if not VARIANTS[settings.variant].score_based:
        return {}
    maps = 2 if settings.variant == "diff" else 1  # diff caps each of its two maps
    found = {"score stages": maps * z.heads * z.queries * z.keys} if settings.softcap is not None else {}
    extra = 0
    if settings.qk_norm != "none":
        extra += z.heads * (z.queries + z.keys) * max(1, z.d_q // z.heads) + z.d_q + z.d_k  # q_n, k_n, weights
        if settings.variant == "mla":  # and each head's whole query put back together before its norm
            extra += z.heads * z.queries * max(1, z.d_q // z.heads)
    if settings.gate:
        extra += 2 * z.queries * z.d_v * max(1, z.heads) + z.d_q * z.d_v * max(1, z.heads)  # gate, gated, W_g
    return found | ({"output": extra} if extra else {})
