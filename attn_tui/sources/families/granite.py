"""Granite: a Llama layer scaled by `config.attention_multiplier` instead of 1/√d_k (its embeddings and residuals
carry multipliers of their own, already in each layer's hidden state)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.sources.families import llama
from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def layer(run_: ModelRun, index: int) -> LayerSpec:
    # the attention's `scaling` is config.attention_multiplier; the spec names it so the views can say so
    return replace(llama.layer(run_, index), scale_name="attention_multiplier")


FAMILY = Family("granite", causal=True, layer=layer, kv_heads=llama.kv_heads, rope_base=llama.rope_base)
