"""Mistral: a Llama layer (RMSNorm input, rotate-half RoPE, grouped key/value heads) whose every layer slides.

Its attention has no window of its own: transformers builds one sliding-window causal mask from
`config.sliding_window` for all layers (query i sees keys i − window < j ≤ i), so the window is read there.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.sources.families import llama
from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def config_window(config: object) -> int | None:
    """`config.sliding_window` as every layer's window (None: every earlier key, as Llama)."""
    window = getattr(config, "sliding_window", None)
    return None if window is None else int(window)


def layer(run_: ModelRun, index: int) -> LayerSpec:
    return replace(llama.layer(run_, index), window=config_window(run_.loaded.model.config))


FAMILY = Family("mistral", causal=True, layer=layer, kv_heads=llama.kv_heads, rope_base=llama.rope_base)
