"""Gemma 2: a Llama-style layer (RMSNorm input, rotate-half RoPE, grouped key/value heads) with a logit soft
cap, `cap·tanh(s / cap)` on the scaled scores, and layers that alternate a sliding window and global attention."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.sources.families import llama
from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def layer(run_: ModelRun, index: int) -> LayerSpec:
    cap = run_.loaded.model.layers[index].self_attn.attn_logit_softcapping
    return replace(llama.layer(run_, index), soft_cap=None if cap is None else float(cap))


FAMILY = Family("gemma2", causal=True, layer=layer, kv_heads=llama.kv_heads, rope_base=llama.rope_base)
