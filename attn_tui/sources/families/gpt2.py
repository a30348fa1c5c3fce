"""GPT-2: one fused Conv1D (`c_attn`) for q, k and v with biases, read after the block's ln_1; causal."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.sources.families.spec import Family, LayerSpec

if TYPE_CHECKING:
    from attn_tui.sources.model_run import ModelRun


def layer(run_: ModelRun, index: int) -> LayerSpec:
    block = run_.loaded.model.h[index]
    w, b = block.attn.c_attn.weight.T, block.attn.c_attn.bias  # (3d, d), (3d,): Conv1D stores (d, 3d)
    d = w.shape[1]
    weights = {}
    for n, part in enumerate("qkv"):  # the fused projection split into its three row blocks
        weights[f"W_{part}"], weights[f"b_{part}"] = w[n * d:(n + 1) * d], b[n * d:(n + 1) * d]
    heads = run_.loaded.heads
    return LayerSpec(block.ln_1(run_.hidden_states[index]), "the layer's input after ln_1", weights, heads, heads,
                     d // heads, float(block.attn.scaling), causal=True)


FAMILY = Family("gpt2", causal=True, layer=layer, blocks="h", output="attn.c_proj", mlp_matrices=2,
                sizes={"layers": "n_layer", "width": "n_embd", "inner": "n_inner", "positions": "n_positions",
                       "heads": "n_head"})
