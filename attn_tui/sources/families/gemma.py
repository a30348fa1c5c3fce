"""Gemma (1): a Llama layer whose RMSNorm scales by (1 + w), whose heads are `config.head_dim` wide (not
hidden / heads: 256 in Gemma 7B's 16 heads of a 3072 width), scaled by head_dim^−0.5; global and causal.

Its embeddings are multiplied by √hidden before the first layer; the traced input is the layer's own hidden
state, so that factor is already in it."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from attn_tui.sources.families import llama
from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def layer(run_: ModelRun, index: int) -> LayerSpec:
    # llama.layer runs the block's GemmaRMSNorm and reads the attention's own head_dim and scaling
    return replace(llama.layer(run_, index), source="[RMSNorm(X)·(1 + w)]")


FAMILY = Family("gemma", causal=True, layer=layer, kv_heads=llama.kv_heads, rope_base=llama.rope_base)
