"""A recording keeps each call's graph back to its projections' inputs, and no further (recorder/prune.py).

The memory test can fail: before the cut, a model's last call held every earlier layer's MLP.
The other tests are the cases a cut in the wrong place would break: an attention reading the
output of the one before it, additive attention's scoring vector (a linear to one number), and
queries taken straight from the tensor the keys are projected from.
"""

from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.prune import cut_behind
from tests.sources.recorder import modules as m
from tests.sources.recorder.test_parity import every_cell_matches


def reachable(anchors: list[Node]) -> list[Node]:
    """Every node the recording keeps alive from its calls: their inputs and their forward links."""
    seen: dict[int, Node] = {}
    stack = list(anchors)
    while stack:
        node = stack.pop()
        if id(node) not in seen:
            seen[id(node)] = node
            stack.extend(node.tensors())
            stack.extend(node.consumers)
    return list(seen.values())


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
