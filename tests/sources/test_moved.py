"""The `moved` stage, ‖A[i,j] · v_j·W_O,hᵀ‖ (Kobayashi et al. 2020), against a float64 loop over transformers' own
value vectors (caught by a hook on the model's value projection), its weights and its output projection; the
inspector's recomputation; and the value-weighted rollout."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk
from attn_tui.attention.summary import rollout
from attn_tui.explain.cell import explain
from attn_tui.sources import run
from attn_tui.trace.ops import Place
from tests.sources.test_families import CONFIGS
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]

# where each family keeps its value projection (and which columns of its output are v) and its output projection
VALUE_AND_OUTPUT = {
    "llama": (lambda block: block.self_attn.v_proj, None, lambda block: block.self_attn.o_proj.weight),
    "bert": (lambda block: block.attention.self.value, None, lambda block: block.attention.output.dense.weight),
    "gpt2": (lambda block: block.attn.c_attn, 2, lambda block: block.attn.c_proj.weight.T),  # Conv1D: (in, out)
}


def _reference(path: Path, model_type: str) -> tuple[list[list[list[list[float]]]], int]:
    """moved[layer][head] as nested lists, by loops in float64 from the model's own tensors; and N."""
    import transformers

    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    value_of, third, output_of = VALUE_AND_OUTPUT[model_type]
    blocks = {"llama": lambda: model.layers, "bert": lambda: model.encoder.layer, "gpt2": lambda: model.h}[model_type]()
    caught: list[torch.Tensor] = []
    hooks = [value_of(block).register_forward_hook(lambda _m, _i, out: caught.append(out[0].detach()))
             for block in blocks]
    with torch.no_grad():
        out = model(**tokenizer(TEXT, return_tensors="pt"), output_attentions=True)
    for hook in hooks:
        hook.remove()
    cfg = model.config
    heads = cfg.num_attention_heads
    kv = getattr(cfg, "num_key_value_heads", None) or heads
    moved = []
    for layer, block in enumerate(blocks):
        v = caught[layer].double()  # (N, kv·d_h) or GPT-2's (N, 3d)
        if third is not None:
            v = v[:, third * v.shape[1] // 3:]
        d_h = v.shape[1] // kv
        w_o = output_of(block).detach().double().tolist()  # (d, heads·d_h)
        a = out.attentions[layer][0].double().tolist()
        per_head = []
        for h in range(heads):
            g = h // (heads // kv)
            rows = []
            for i in range(len(a[h])):
                row = []
                for j in range(len(a[h])):
                    vj = v[j, g * d_h:(g + 1) * d_h].tolist()
                    f = [sum(vj[c] * w_o[r][h * d_h + c] for c in range(d_h)) for r in range(len(w_o))]
                    row.append(math.sqrt(sum(x * x for x in f)) * a[h][i][j])
                rows.append(row)
            per_head.append(rows)
        moved.append(per_head)
    return moved, len(moved[0][0])


@pytest.mark.parametrize("model_type", sorted(VALUE_AND_OUTPUT))
def test_moved_equals_the_loop_over_the_models_own_values_and_w_o(tmp_path: Path, model_type: str) -> None:
    path = tiny(tmp_path, model_type, CONFIGS[model_type])
    shown = run(ModelAsk(str(path), TEXT, device="cpu"))
    trace = shown.trace
    expected, n = _reference(path, model_type)
    assert "moved" in trace.names()
    for layer in range(trace.layers):
        for head in range(trace.heads):
            got = trace.tensor("moved", layer, head)
            torch.testing.assert_close(got.double(), torch.tensor(expected[layer][head], dtype=torch.float64),
                                       atol=1e-4, rtol=1e-4)
    for cell in ((0, 0), (n - 1, 2), (4, 3)):  # the inspector recomputes a cell to the stored value
        arithmetic = explain(trace, Place("moved", 1, 1), cell)
        assert arithmetic.total == pytest.approx(arithmetic.expected, rel=1e-4, abs=1e-6)
        assert any("W_O" in line for line in arithmetic.lines)
    assert shown.stats is not None and shown.stats.rollout_moved is not None
    normed = torch.tensor(expected, dtype=torch.float64)  # (layers, heads, N, N)
    normed = normed / normed.sum(-1, keepdim=True)
    torch.testing.assert_close(shown.stats.rollout_moved.double(), rollout(normed), atol=1e-4, rtol=1e-4)
    assert not torch.allclose(shown.stats.rollout_moved, shown.stats.rollout, atol=1e-3)  # the values do matter
    for roles in shown.stats.roles:  # each head's mean per query of what it moves: what the atlas ranks by
        rows = expected[roles.layer][roles.head]
        assert roles.moved == pytest.approx(sum(map(sum, rows)) / len(rows), rel=1e-4)


def test_rollout_of_a_head_whose_values_all_move_alike_is_the_plain_rollout() -> None:
    """Equal value norms: each row of M is the weights times one number, so Ã = A and both rollouts agree."""
    g = torch.Generator().manual_seed(0)
    weights = torch.softmax(torch.randn(3, 2, 5, 5, generator=g, dtype=torch.float64), -1)
    moved = weights * 7.0
    torch.testing.assert_close(rollout(moved / moved.sum(-1, keepdim=True)), rollout(weights))
