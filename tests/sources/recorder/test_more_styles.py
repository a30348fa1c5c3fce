"""Attention written in ways the notes do not show, which the recorder still lays out (recomputed cell by cell)."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from tests.sources.recorder.test_parity import every_cell_matches


class SplitHeads(nn.Module):
    """Separate W_q, W_k, W_v, heads by view + transpose, einsum products, a padding mask of -1e9."""

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        self.heads, self.d_k = heads, d // heads
        self.W_q, self.W_k, self.W_v, self.W_o = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, mask):
        b, n, _ = x.shape
        q = self.W_q(x).view(b, n, self.heads, self.d_k).transpose(1, 2)
        k = self.W_k(x).view(b, n, self.heads, self.d_k).transpose(1, 2)
        v = self.W_v(x).view(b, n, self.heads, self.d_k).transpose(1, 2)
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_k)
        scores = scores.masked_fill(mask[:, None, None, :] == 0, -1e9)
        weights = scores.softmax(dim=-1)
        out = torch.einsum("bhqk,bhkd->bhqd", weights, v).transpose(1, 2).contiguous().view(b, n, -1)
        return self.W_o(out), weights


def test_split_heads_with_einsum() -> None:
    torch.manual_seed(0)
    module = SplitHeads(8, 2)
    x, mask = torch.randn(2, 4, 8), torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    with attn_tui.record() as rec:
        output, weights = module(x, mask)
    trace = rec.trace
    assert trace.names() == ["input", "query", "key", "value", "scores", "scaled", "masked", "weights", "output",
                             "concat", "projected"]
    assert trace.stage("query", head=1).op.offset == 4 and trace.stage("query", head=1).op.weight == "W_q.weight"
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), output[b])
        assert torch.equal(trace.tensor("weights", head=1, step=b), weights[b, 1])
    every_cell_matches(trace)


def test_an_added_causal_mask_and_a_float32_softmax_cast_back() -> None:
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4), torch.randn(1, 2, 3, 4)
    with attn_tui.record() as rec:
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(4)
        causal = torch.triu(torch.ones(3, 3), diagonal=1).bool()
        scores = scores + torch.zeros_like(scores).masked_fill(causal, float("-inf"))
        output = torch.matmul(F.softmax(scores.float(), dim=-1).type_as(q), v)
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    assert torch.equal(trace.tensor("output", head=1), output[0, 1])
    every_cell_matches(trace)


def test_masks_by_where_and_by_item_assignment() -> None:
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)
    future = torch.triu(torch.ones(3, 3), 1).bool()
    with attn_tui.record() as rec:
        scores = torch.where(~future, q @ k.mT, torch.tensor(float("-inf")))
        first = scores.softmax(-1) @ v
    with attn_tui.record() as rec2:
        scores = q @ k.T
        scores[future] = float("-inf")
        second = torch.softmax(scores, -1) @ v
    for trace, output in ((rec.trace, first), (rec2.trace, second)):
        assert trace.names() == ["query", "key", "value", "scores", "masked", "weights", "output"]
        assert torch.equal(trace["output"], output)
        assert torch.equal(trace.stage("masked").op.mask.allowed, ~future)
        every_cell_matches(trace)


def test_a_softmax_written_out() -> None:
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)
    with attn_tui.record() as rec:
        scores = q @ k.T
        e = torch.exp(scores - scores.max(dim=-1, keepdim=True).values)
        weights = e / e.sum(dim=-1, keepdim=True)
        output = weights @ v
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "shifted", "weights", "output"]
    assert torch.equal(trace["weights"], weights) and torch.equal(trace["output"], output)
    every_cell_matches(trace)


def test_transformer_layers_and_cross_attention() -> None:
    torch.manual_seed(1)
    layer = nn.TransformerEncoderLayer(8, 2, dim_feedforward=16, batch_first=True).eval()
    cross = nn.MultiheadAttention(8, 2, batch_first=True)
    x, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
    with attn_tui.record() as rec:
        hidden = layer(x)
        output, _ = cross(hidden, memory, memory)
    trace = rec.trace
    assert trace.modules() == ["self_attn", "MultiheadAttention"]  # by its path in the layer; the other ran alone
    assert "key_input" in trace.names()  # the memory the decoder reads
    assert torch.equal(trace.tensor("projected", step=1, module="MultiheadAttention"), output[1])
    every_cell_matches(trace)


def test_sdpa_with_a_float_bias_that_is_no_mask() -> None:
    torch.manual_seed(2)
    q, bias = torch.randn(2, 3, 4), torch.randn(3, 3)
    with attn_tui.record() as rec:
        output = F.scaled_dot_product_attention(q, q, q, attn_mask=bias)
    trace = rec.trace
    assert trace.names() == ["query", "key", "scores", "scaled", "bias", "biased", "weights", "output"]
    assert torch.equal(trace.tensor("output", step=1), output[1])
    assert torch.allclose(trace.tensor("weights", step=0), torch.softmax(q[0] @ q[0].T / 2 + bias, -1), atol=1e-6)
    every_cell_matches(trace)
