"""BERT-style encoders (BERT, MiniLM, RoBERTa, XLM-R): separate query, key and value linears with biases.

Read straight from each layer's input hidden state; positions were added to the input
(absolute), every token sees every other, the scale is the layer's own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def layer(run_: ModelRun, index: int) -> LayerSpec:
    model = run_.loaded.model
    attn = model.encoder.layer[index].attention.self
    weights = {f"{kind}_{part}": getattr(lin, attr) for part, lin in zip("qkv", (attn.query, attn.key, attn.value))
               for kind, attr in (("W", "weight"), ("b", "bias"))}
    heads = run_.loaded.heads
    x = run_.hidden_states[index]  # (N, d)
    return LayerSpec(x, "the layer's input", weights, heads, heads, x.shape[1] // heads, float(attn.scaling),
                     causal=False)


FAMILY = Family("bert", causal=False, layer=layer, model_types=("bert", "roberta", "xlm-roberta"),
                blocks="encoder.layer", output="attention.output.dense", mlp_matrices=2)
