"""The recorder on attention written every way the notes write it: what it recorded is what the code computed.

For each style: the recorded output equals what the code returned bit for bit, the
recorded weights equal the code's softmax (torch.equal), the stages get the usual names,
and the inspector's recomputation of every cell of every stage matches the stored value.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.explain.cell import explain
from attn_tui.trace.ops import Columns, Concat, Dot, Linear, Masking, Reduce, Scale, Softmax, TanhOfPair, TanhOfSum
from tests.sources.recorder import modules as m

HERE = Path(m.__file__).name


def every_cell_matches(trace) -> None:
    """The inspector's arithmetic, recomputed from the trace alone, equals every stored cell."""
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches, (stage.key, index, arithmetic.total, arithmetic.expected)


def names(trace) -> list[str]:
    return trace.names()


def test_self_attention_with_a_causal_mask() -> None:
    torch.manual_seed(1)
    module = m.SelfAttention(6)
    x = torch.randn(2, 4, 6)
    mask = torch.tril(torch.ones(4, 4))
    with attn_tui.record() as rec:
        output, weights = module(x, mask)
    trace = rec.trace
    assert names(trace) == ["input", "query", "key", "key_scaled", "value", "scaled", "masked", "weights", "output"]
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), output[b])
        assert torch.equal(trace.tensor("weights", step=b), weights[b])
    masked = trace.stage("masked", step=1)
    assert isinstance(masked.op, Masking) and masked.op.fill == "-inf"
    assert masked.op.mask is not None and torch.equal(masked.op.mask.allowed, mask.bool())
    assert isinstance(trace.stage("query").op, Linear) and trace.stage("query").op.weight == "query.weight"
    assert isinstance(trace.stage("key_scaled").op, Scale)
    assert math.isclose(trace.stage("key_scaled").op.factor, 1 / math.sqrt(6), rel_tol=1e-9)
    assert isinstance(trace.stage("scaled").op, Dot)
    assert torch.equal(trace.params["value.weight"], module.value.weight.detach())
    every_cell_matches(trace)


def test_fused_multihead_with_permute() -> None:
    torch.manual_seed(2)
    module = m.MultiHeadAttention(8, 4)
    x = torch.randn(2, 3, 8)
    mask = torch.tril(torch.ones(3, 3)).expand(2, 3, 3)
    with attn_tui.record() as rec:
        output, weights = module(x, mask)
    trace = rec.trace
    assert trace.heads == 4 and trace.steps() == 2
    assert names(trace) == ["input", "qkv_proj", "query", "key", "value", "scores", "scaled", "masked", "weights",
                            "output", "concat", "projected"]
    for b, h in itertools.product(range(2), range(4)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), weights[b, h])
        query = trace.stage("query", head=h, step=b)
        assert isinstance(query.op, Columns) and query.op.offset == 2 * h  # q is the first third, head h its slice
        assert isinstance(trace.stage("key", head=h, step=b).op, Columns)
        assert trace.stage("key", head=h, step=b).op.offset == 8 + 2 * h
        assert trace.stage("value", head=h, step=b).op.offset == 16 + 2 * h
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), output[b])
    assert isinstance(trace.stage("concat").op, Concat)
    every_cell_matches(trace)


def test_bahdanau_decoder_steps() -> None:
    torch.manual_seed(3)
    module = m.BahdanauAttention(5)
    keys = torch.randn(1, 6, 5)
    states = [torch.randn(1, 1, 5) for _ in range(3)]
    with attn_tui.record() as rec:
        results = [module(state, keys) for state in states]  # one call per decoder step
    trace = rec.trace
    assert trace.steps() == 3 and trace.meta.kinds == ("additive",)
    assert names(trace) == ["query", "query_proj", "key", "key_proj", "energy", "scores", "weights", "output"]
    for t, (context, weights) in enumerate(results):
        assert torch.equal(trace.tensor("output", step=t), context[0])
        assert torch.equal(trace.tensor("weights", step=t), weights[0])
        assert torch.equal(trace.tensor("query", step=t), states[t][0])
    assert isinstance(trace.stage("energy").op, TanhOfSum)
    scores = trace.stage("scores").op
    assert isinstance(scores, Reduce) and scores.vector == "Va.weight" and scores.bias == "Va.bias"
    every_cell_matches(trace)


def test_luong_general_with_bmm_and_an_in_place_padding_mask() -> None:
    torch.manual_seed(4)
    module = m.LuongGeneral(4)
    h_src, h_t = torch.randn(2, 5, 4), torch.randn(2, 1, 4)
    padding = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)  # the notes' 1 = padding
    with attn_tui.record() as rec:
        context, weights = module(h_src, h_t, padding)
    trace = rec.trace
    assert names(trace) == ["query", "query_proj", "key", "scores", "masked", "weights", "output"]
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), context[b])
        assert torch.equal(trace.tensor("weights", step=b), weights[b])
    # masked_fill_ overwrote the product in place: the scores are kept as they were before it
    scores = trace.tensor("scores", step=0)
    assert torch.isfinite(scores).all()
    assert torch.equal(trace.stage("masked", step=0).op.mask.allowed, ~padding[0][None])
    assert trace.stage("masked", step=1).op.mask is None  # nothing masked in the second sentence
    every_cell_matches(trace)


def test_concat_attention_with_cat_and_a_v_parameter() -> None:
    torch.manual_seed(5)
    module = m.ConcatAttention(4)
    hidden, outputs = torch.randn(3, 4), torch.randn(3, 5, 4)
    with attn_tui.record() as rec:
        context, weights = module(hidden, outputs)
    trace = rec.trace
    assert names(trace) == ["query", "key", "energy", "scores", "weights", "output"]
    energy = trace.stage("energy", step=2).op
    assert isinstance(energy, TanhOfPair) and energy.weight == "attn.weight" and energy.bias == "attn.bias"
    assert isinstance(trace.stage("scores").op, Reduce) and trace.stage("scores").op.vector == "v"
    for b in range(3):
        assert torch.equal(trace.tensor("output", step=b)[0], context[b])
        assert torch.equal(trace.tensor("weights", step=b)[0], weights[b])
    every_cell_matches(trace)


def test_a_plain_function() -> None:
    torch.manual_seed(6)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    with attn_tui.record(tokens=["나는", "학교에", "간다"], key_tokens=list("abcde")) as rec:
        context = m.attention(q, k, v)
    trace = rec.trace
    assert names(trace) == ["query", "key", "value", "scores", "weights", "output"]
    assert torch.equal(trace["output"], context)
    assert torch.equal(trace["weights"], F.softmax(q @ k.T, dim=-1))
    assert trace.query_tokens == ("나는", "학교에", "간다") and trace.key_tokens == tuple("abcde")
    assert trace.meta.modules == ("attention",)
    every_cell_matches(trace)


def test_an_additive_mask_of_minus_1e9() -> None:
    torch.manual_seed(7)
    q, k, v = torch.randn(2, 3), torch.randn(4, 3), torch.randn(4, 2)
    mask = torch.tensor([0.0, 0.0, 1.0, 1.0])
    with attn_tui.record() as rec:
        output, weights = m.additive_mask_attention(q, k, v, mask)
    trace = rec.trace
    assert names(trace) == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    masked = trace.stage("masked").op
    assert isinstance(masked, Masking) and masked.fill == "-1e9"
    assert torch.equal(masked.mask.allowed, (mask == 0).expand(2, 4))
    assert torch.equal(trace["weights"], weights) and torch.equal(trace["output"], output)
    every_cell_matches(trace)


@pytest.mark.parametrize("average", [False, True])
def test_nn_multihead_attention(average: bool) -> None:
    torch.manual_seed(8)
    module = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 3, 8)
    padding = torch.tensor([[False, False, True], [False, False, False]])
    with attn_tui.record() as rec:
        output, weights = module(x, x, x, key_padding_mask=padding, average_attn_weights=average)
    trace = rec.trace
    assert trace.heads == 2 and trace.meta.kinds == ("multihead",)
    assert names(trace)[:5] == ["input", "query", "key", "value", "scores"]
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), output[b])
        if not average:
            for h in range(2):
                assert torch.equal(trace.tensor("weights", head=h, step=b), weights[b, h])
        else:
            per_head = torch.stack([trace.tensor("weights", head=h, step=b) for h in range(2)])
            assert torch.allclose(per_head.mean(0), weights[b], atol=1e-6)
            assert torch.equal(trace.tensor("mean_weights", step=b), weights[b])
    assert trace.stage("masked", step=0, head=1).op.mask is not None
    assert isinstance(trace.stage("query", head=1).op, Linear) and trace.stage("query", head=1).op.offset == 4
    every_cell_matches(trace)


def test_nn_multihead_attention_across_two_tensors_names_each_input_once() -> None:
    """Queries from one tensor, keys and values from another (cross-attention): two inputs, each laid out once."""
    torch.manual_seed(3)
    module = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x, memory = torch.randn(1, 3, 8), torch.randn(1, 5, 8)
    with attn_tui.record() as rec:
        output, _ = module(x, memory, memory)
    trace = rec.trace
    assert [n for n in names(trace) if n.endswith("input")] == ["input", "key_input"]
    assert torch.equal(trace.tensor("input"), x[0]) and torch.equal(trace.tensor("key_input"), memory[0])
    assert torch.equal(trace.tensor("projected"), output[0])
    every_cell_matches(trace)


def test_scaled_dot_product_attention() -> None:
    torch.manual_seed(9)
    q, k, v = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 5, 8), torch.randn(2, 3, 5, 6)
    with attn_tui.record() as rec:
        output = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    trace = rec.trace
    assert trace.heads == 3 and trace.steps() == 2
    assert names(trace) == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    for b, h in itertools.product(range(2), range(3)):
        assert torch.equal(trace.tensor("output", head=h, step=b), output[b, h])
        expected = torch.softmax((q[b, h] @ k[b, h].T / math.sqrt(8)).masked_fill(
            ~torch.ones(4, 5, dtype=torch.bool).tril(), -math.inf), dim=-1)
        assert torch.allclose(trace.tensor("weights", head=h, step=b), expected, atol=1e-6)
    every_cell_matches(trace)


def test_each_stage_names_the_line_that_made_it() -> None:
    torch.manual_seed(10)
    module = m.SelfAttention(4)
    with attn_tui.record() as rec:
        module(torch.randn(1, 3, 4), torch.tril(torch.ones(3, 3)))
    trace = rec.trace
    source = Path(m.__file__).read_text(encoding="utf-8").splitlines()

    def line_of(text: str) -> int:
        return next(n for n, line in enumerate(source, start=1) if text in line)

    expected = {"query": "Q = self.query(x)", "key": "K = self.key(x)",
                "scaled": "scores = torch.matmul(Q, K.transpose(-2, -1) / self.scale)",
                "masked": "scores = scores.masked_fill(mask == 0", "weights": "attention_weights = F.softmax",
                "output": "output = torch.matmul(attention_weights, V)"}
    for name, code in expected.items():
        assert trace.stage(name).origin == f"{HERE}:{line_of(code)}: {source[line_of(code) - 1].strip()}"


def test_softmax_written_out_and_weights_returned_alone_still_trace() -> None:
    """No product with values: the softmax's own dimension is the keys."""
    scores = torch.randn(2, 3, 4)
    with attn_tui.record() as rec:
        weights = torch.softmax(scores * 0.5, dim=-1)
    trace = rec.trace
    assert names(trace) == ["scores", "scaled", "weights"]
    assert torch.equal(trace.tensor("weights", step=1), weights[1])
    assert isinstance(trace.stage("weights").op, Softmax)
    every_cell_matches(trace)
