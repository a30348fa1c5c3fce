"""A recording keeps each call's graph back to its projections' inputs, and no further (recorder/hooks/prune.py).

The memory test can fail: before the cut, a model's last call held every earlier layer's MLP.
The other tests are the cases a cut in the wrong place would break: an attention reading the
output of the one before it, additive attention's scoring vector (a linear to one number), and
queries taken straight from the tensor the keys are projected from.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.hooks.prune import cut_behind
from attn_tui.sources.recorder.node import Node, walk
from tests.sources.recorder import modules as m
from tests.sources.recorder.test_parity import every_cell_matches


def reachable(anchors: list[Node]) -> list[Node]:
    """Every node the recording keeps alive from its calls: their inputs and their forward links."""
    return list(walk(anchors, lambda node: [*node.tensors(), *node.consumers]))


class Block(nn.Module):
    """A pre-norm block: attention through SDPA, then an MLP, each added to the residual stream."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.out = nn.Linear(width, width)
        self.up = nn.Linear(width, 4 * width)
        self.down = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        batch, length, width = x.shape
        h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)  # an RMS norm written out: recorded, so
        # the projections' input is a node whose history runs back through every layer before
        q, k, v = (t.view(batch, length, self.heads, -1).transpose(1, 2) for t in self.qkv(h).chunk(3, -1))
        attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (batch, heads, length, d)
        x = x + self.out(attended.transpose(1, 2).reshape(batch, length, width))
        return x + self.down(torch.relu(self.up(x)) * 2.0)


def test_a_deep_models_last_call_no_longer_holds_the_earlier_layers_mlps() -> None:
    torch.manual_seed(0)
    blocks = nn.Sequential(*(Block(16, 2) for _ in range(4))).eval()
    x = torch.randn(1, 5, 16)
    with torch.no_grad(), attn_tui.record() as rec:
        blocks(x)
    anchors = [node for calls in rec.recorder.anchors.values() for node in calls]
    assert len(anchors) == 4
    kept = {node.param for node in reachable(anchors) if node.is_param}
    assert kept and not {name for name in kept if name and ("up." in name or "down." in name)}, kept
    trace = rec.trace
    assert trace.meta.modules == tuple(str(i) for i in range(4))
    for layer in range(4):
        assert trace.tensor("weights", head=1, module=str(layer)).shape == (5, 5)


def test_stacked_attention_reading_the_last_ones_output_keeps_that_output_whole() -> None:
    torch.manual_seed(4)
    first, second = m.SelfAttention(6), m.SelfAttention(6)
    x = torch.randn(1, 4, 6)
    with attn_tui.record() as rec:
        middle, weights_1 = first(x)
        output, weights_2 = second(middle)  # its projections read the first call's output
    trace = rec.trace
    modules = trace.meta.modules
    assert len(modules) == 2
    assert torch.equal(trace.tensor("weights", module=modules[0]), weights_1[0])
    assert torch.equal(trace.tensor("output", module=modules[0]), middle[0])
    assert torch.equal(trace.tensor("weights", module=modules[1]), weights_2[0])
    assert torch.equal(trace.tensor("output", module=modules[1]), output[0])


def test_additive_scoring_reads_back_through_its_linear_to_one_number() -> None:
    torch.manual_seed(3)
    module = m.BahdanauAttention(5)
    with attn_tui.record() as rec:
        module(torch.randn(1, 1, 5), torch.randn(1, 6, 5))
    assert rec.trace.meta.kinds == ("additive",)
    every_cell_matches(rec.trace)


def test_an_input_also_read_without_a_projection_is_not_cut() -> None:
    torch.manual_seed(5)
    key_proj = nn.Linear(4, 4)
    x = torch.randn(3, 4)
    with attn_tui.record() as rec:
        h = x * 3.0  # read as the queries themselves and, through key_proj, as the keys
        weights = torch.softmax(h @ key_proj(h).T, dim=-1)
    anchor = next(iter(rec.recorder.anchors.values()))[0]
    cut_behind(anchor)  # again: a second walk finds h reached directly and leaves it
    made = [node for node in reachable([anchor]) if node.name == "mul"]
    assert made and made[0].inputs, "the queries' scaling was cut away"
    assert torch.equal(rec.trace.tensor("weights"), weights)


def test_a_fused_call_keeps_its_operands_and_lets_the_cache_and_rotary_products_go() -> None:
    """A Hugging Face Llama as it runs by default: SDPA reads rotated queries and keys, and keys and values from
    its cache (a `cat` of the past and the new); those are kept as values, what made them is let go, and each
    layer's weights still equal eager attention's `output_attentions`."""
    transformers = pytest.importorskip("transformers")
    config = transformers.LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
                                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa").eval()
    ids = torch.randint(0, 50, (1, 7))
    with torch.no_grad(), attn_tui.record() as rec:
        model(ids)
    anchors = [node for calls in rec.recorder.anchors.values() for node in calls]
    assert len(anchors) == 3 and all(node.name == "scaled_dot_product_attention" for node in anchors)
    made = {node.name for node in reachable(anchors) if not node.is_param}
    assert not made & {"neg", "cat", "mul", "add"}, made  # rotate_half's halves, the cache's join, the norms
    model.config._attn_implementation = "eager"
    with torch.no_grad():
        eager = model(ids, output_attentions=True).attentions
    trace = rec.trace
    for module, expected in zip(trace.meta.modules, eager):
        got = torch.stack([trace.tensor("weights", head=h, module=module) for h in range(4)])
        torch.testing.assert_close(got, expected[0], atol=1e-5, rtol=0)


def test_a_fused_call_on_heads_joined_again_keeps_the_join_and_its_projection() -> None:
    torch.manual_seed(7)
    proj = nn.Linear(8, 3 * 2 * 4)
    x = torch.randn(1, 5, 8)
    with attn_tui.record() as rec:
        q, k, v = (torch.stack(t.split(4, -1), 1) for t in proj(x).chunk(3, -1))  # (1, 2, 5, 4): pieces joined
        out = F.scaled_dot_product_attention(q, k, v)
    trace = rec.trace
    assert trace.names()[:2] == ["input", "qkv_proj"]  # read back through each stack to the one linear
    assert "qkv_proj" in str(trace.stage("query", head=1).formula)
    assert torch.equal(trace.tensor("output", head=1), out[0, 1])
