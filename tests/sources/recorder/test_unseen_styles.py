"""The recorder on attention written in styles the first tests never showed it (`more_modules.py`).

For each: no exception escapes, the recorded output equals what the code returned bit for
bit, the recorded weights equal the code's own softmax, the stages get the usual names,
batch and head dimensions are the step and head selectors, and the inspector's
recomputation of every cell of every stage matches the stored value.
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.trace.ops import Columns, Concat, Linear, Masking, Reduce, Scale, TanhOfPair, TanhOfSum, WeightedSum
from tests.sources.recorder import more_modules as mm
from tests.sources.recorder.test_parity import every_cell_matches

SELF = ["input", "query", "key", "value", "scores", "scaled", "masked", "weights", "output", "concat", "projected"]
PLAIN = ["query", "key", "value", "scores", "scaled", "weights", "output"]


def recorded(fn, *args):
    with attn_tui.record() as rec:
        result = fn(*args)
    return rec.trace, result


def test_einsum_inverse_scale_and_a_bool_mask() -> None:
    torch.manual_seed(0)
    module = mm.EinsumAttention(8, 2)
    x, mask = torch.randn(2, 4, 8), torch.tril(torch.ones(4, 4, dtype=torch.bool))
    trace, (out, attn) = recorded(module, x, mask)
    assert trace.names() == SELF[:9] and trace.heads == 2 and trace.steps() == 2
    for b, h in itertools.product(range(2), range(2)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), attn[b, h])
        assert torch.equal(trace.tensor("output", head=h, step=b), out[b, :, 4 * h:4 * h + 4])
        query = trace.stage("query", head=h, step=b).op
        assert isinstance(query, Linear) and query.weight == "to_q.weight" and query.offset == 4 * h
    scaled = trace.stage("scaled").op
    assert isinstance(scaled, Scale) and math.isclose(scaled.factor, 4 ** -0.5)
    assert torch.equal(trace.stage("masked").op.mask.allowed, mask)
    every_cell_matches(trace)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_inverse_scale_and_a_float32_softmax(dtype: torch.dtype) -> None:
    torch.manual_seed(1)
    q, k, v = (torch.randn(n, 4, dtype=dtype) for n in (3, 5, 5))
    trace, (out, att) = recorded(mm.inverse_scale_attention, q, k, v)
    assert trace.names() == PLAIN
    assert torch.equal(trace["output"], out) and trace["output"].dtype == dtype
    # the weights are the float32 softmax the code computed; cast back, they are what it returned
    assert trace["weights"].dtype == torch.float32
    assert torch.equal(trace["weights"].to(dtype), att)
    every_cell_matches(trace)


def test_baddbmm_is_a_product_a_scale_and_no_bias() -> None:
    torch.manual_seed(2)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    trace, (out, weights) = recorded(mm.baddbmm_attention, q, k, v)
    assert trace.names() == PLAIN and trace.steps() == 2
    assert math.isclose(trace.stage("scaled").op.factor, 0.5)
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), out[b])
        assert torch.equal(trace.tensor("weights", step=b), weights[b])
        assert torch.equal(trace.tensor("query", step=b), q[b]) and torch.equal(trace.tensor("key", step=b), k[b])
    every_cell_matches(trace)


def test_baddbmm_with_an_added_mask() -> None:
    torch.manual_seed(3)
    q, k, v = torch.randn(1, 3, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 2)
    causal = torch.full((1, 3, 3), float("-inf")).triu(1)
    with attn_tui.record() as rec:
        weights = torch.softmax(torch.baddbmm(causal, q, k.transpose(1, 2), alpha=0.5), -1)
        out = weights @ v
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    assert torch.equal(trace["output"], out[0]) and torch.equal(trace["weights"], weights[0])
    assert torch.equal(trace.stage("masked").op.mask.allowed, torch.ones(3, 3, dtype=torch.bool).tril())
    every_cell_matches(trace)


def test_one_minus_mask_times_minus_1e9() -> None:
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    mask = torch.tensor([[1.0, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    trace, (out, probs) = recorded(mm.additive_one_minus_mask, q, k, v, mask)
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), out[b])
        assert torch.equal(trace.tensor("weights", step=b), probs[b])
    masked = trace.stage("masked", step=0).op
    assert isinstance(masked, Masking) and masked.fill == "-1e9"
    assert torch.equal(masked.mask.allowed, mask[0].bool().expand(3, 5))
    every_cell_matches(trace)


def test_where_with_a_tensor_of_minus_inf_is_a_mask_not_an_overflow() -> None:
    torch.manual_seed(5)
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)
    allowed = torch.ones(3, 3, dtype=torch.bool).tril()
    trace, (out, weights) = recorded(mm.where_attention, q, k, v, allowed)
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    assert torch.equal(trace["output"], out) and torch.equal(trace["weights"], weights)
    assert torch.equal(trace.stage("masked").op.mask.allowed, allowed) and trace.stage("masked").op.fill == "-inf"
    assert not trace.warnings
    every_cell_matches(trace)


@pytest.mark.parametrize("cross", [False, True])
def test_view_transpose_heads_with_dropout_in_eval(cross: bool) -> None:
    torch.manual_seed(6)
    module = mm.ViewTransposeHeads(8, 2).eval()
    x = torch.randn(2, 3, 8)
    memory = torch.randn(2, 6, 8) if cross else x
    mask = None if cross else torch.tensor([[[1.0, 1, 0]], [[1, 1, 1]]])
    trace, (out, p_attn) = recorded(module, x, memory, memory, mask)
    expected = SELF if not cross else [n for n in SELF if n != "masked"]
    if cross:
        expected = expected[:2] + ["key_input"] + expected[2:]
    assert trace.names() == expected and trace.heads == 2 and trace.steps() == 2
    for b, h in itertools.product(range(2), range(2)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), p_attn[b, h])
        assert trace.tensor("weights", head=h, step=b).shape == (3, 6 if cross else 3)
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[b])
    every_cell_matches(trace)


def test_a_python_loop_over_head_modules_is_one_attention_with_heads() -> None:
    torch.manual_seed(7)
    module = mm.HeadLoop(8, 2, 6).eval()
    x = torch.randn(2, 5, 8)
    trace, out = recorded(module, x)
    assert trace.meta.modules == ("HeadLoop",) and trace.heads == 2 and trace.steps() == 2
    assert trace.names() == SELF
    for b, h in itertools.product(range(2), range(2)):
        head = module.heads[h]  # the head's own arithmetic again, on the same batch: the same numbers
        q, k = head.query(x), head.key(x)
        wei = (q @ k.transpose(-2, -1) * k.shape[-1] ** -0.5).masked_fill(head.tril[:5, :5] == 0, float("-inf"))
        assert torch.equal(trace.tensor("weights", head=h, step=b), F.softmax(wei, dim=-1)[b])
        assert trace.stage("query", head=h, step=b).op.weight == f"heads.{h}.query.weight"
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[b])
    assert isinstance(trace.stage("concat", step=1).op, Concat)
    assert trace.stage("projected").op.weight == "proj.weight"
    every_cell_matches(trace)


@pytest.mark.parametrize(("method", "names"), [
    ("dot", ["query", "key", "scores", "weights", "output"]),
    ("general", ["query", "key", "key_proj", "scores", "weights", "output"]),
    ("concat", ["query", "key", "energy", "scores", "weights", "output"]),
])
def test_luong_scores_of_the_chatbot_tutorial(method: str, names: list[str]) -> None:
    torch.manual_seed(8)
    module = mm.LuongScores(method, 4)
    hidden, encoder_outputs = torch.randn(1, 2, 4), torch.randn(5, 2, 4)  # seq-first
    trace, (context, weights) = recorded(module, hidden, encoder_outputs)
    assert trace.names() == names and trace.steps() == 2
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), context[b])
        assert torch.equal(trace.tensor("weights", step=b), weights[b])
        assert torch.equal(trace.tensor("key", step=b), encoder_outputs[:, b])
    if method == "concat":
        assert isinstance(trace.stage("energy").op, TanhOfPair)
        assert isinstance(trace.stage("scores").op, Reduce) and trace.stage("scores").op.vector == "v"
    else:
        assert torch.equal(trace.tensor("query", step=1), hidden[:, 1])
    every_cell_matches(trace)


def test_bahdanau_with_a_summed_context() -> None:
    torch.manual_seed(9)
    module = mm.Additive(4)
    query, values = torch.randn(2, 4), torch.randn(2, 5, 4)
    trace, (context, weights) = recorded(module, query, values)
    assert trace.names() == ["query", "query_proj", "key", "key_proj", "energy", "scores", "weights", "output"]
    for b in range(2):
        assert torch.equal(trace.tensor("weights", step=b), weights[b].T)  # softmax over dim 1 of (B, S, 1)
        assert torch.equal(trace.tensor("output", step=b), context[b][None])
    assert isinstance(trace.stage("energy").op, TanhOfSum)
    assert isinstance(trace.stage("output").op, WeightedSum)
    every_cell_matches(trace)


def test_a_gru_decoder_calling_bahdanau_each_step() -> None:
    torch.manual_seed(10)
    decoder = mm.AttnDecoder(4, 7)
    encoder_outputs, hidden = torch.randn(1, 6, 4), torch.randn(1, 1, 4)
    trace, (contexts, weights) = recorded(decoder, encoder_outputs, hidden, 3)
    assert trace.meta.modules == ("Additive",) and trace.steps() == 3  # its path, `attention`, says less
    for t in range(3):
        assert torch.equal(trace.tensor("output", step=t), contexts[t])
        assert torch.equal(trace.tensor("weights", step=t), weights[t][0].T)
    every_cell_matches(trace)


def test_grouped_query_heads_repeated_with_repeat_interleave() -> None:
    torch.manual_seed(11)
    module = mm.GroupedQuery(8, 4, 2)
    x = torch.randn(1, 3, 8)
    trace, (out, scores) = recorded(module, x)
    assert trace.names() == SELF and trace.heads == 4 and trace.meta.kinds == ("scaled_dot",)
    for h in range(4):
        assert torch.equal(trace.tensor("weights", head=h), scores[0, h])
        key = trace.stage("key", head=h).op
        assert isinstance(key, Linear) and key.weight == "wk.weight" and key.offset == (h // 2) * 2
    assert torch.equal(trace["projected"], out[0])
    assert torch.equal(trace.stage("masked").op.mask.allowed, torch.ones(3, 3, dtype=torch.bool).tril())
    every_cell_matches(trace)


def test_split_of_one_fused_projection() -> None:
    torch.manual_seed(12)
    module = mm.CausalSelfAttention(8, 2, 6)
    x = torch.randn(2, 4, 8)
    trace, (out, att) = recorded(module, x)
    assert trace.names() == ["input", "qkv_proj", *SELF[1:]]
    for b, h in itertools.product(range(2), range(2)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), att[b, h])
        key = trace.stage("key", head=h, step=b).op
        assert isinstance(key, Columns) and key.offset == 8 + 4 * h
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[b])
    every_cell_matches(trace)


def test_heads_folded_into_the_batch_are_heads() -> None:
    torch.manual_seed(13)
    module = mm.FoldedHeads(8, 2)
    query, key = torch.randn(3, 2, 8), torch.randn(5, 2, 8)  # (time, batch, channel)
    trace, (out, probs) = recorded(module, query, key)
    assert trace.heads == 2 and trace.steps() == 2
    assert trace.names() == ["input", "query", "query_scaled", "key_input", "key", "value", "scaled", "weights",
                             "output", "concat", "projected"]
    for b, h in itertools.product(range(2), range(2)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), probs[b * 2 + h])
        assert trace.stage("query", head=h, step=b).op.offset == 4 * h
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[:, b])
    every_cell_matches(trace)


def test_heads_folded_heads_first() -> None:
    torch.manual_seed(14)
    wq, wk, wv = nn.Linear(8, 8), nn.Linear(8, 8), nn.Linear(8, 8)
    x = torch.randn(3, 4, 8)
    with attn_tui.record() as rec:
        q, k, v = (w(x).view(3, 4, 2, 4).permute(2, 0, 1, 3).contiguous().view(-1, 4, 4) for w in (wq, wk, wv))
        weights = torch.softmax(torch.bmm(q, k.transpose(1, 2)) / 2.0, dim=2)
        out = torch.bmm(weights, v)
    trace = rec.trace
    assert trace.heads == 2 and trace.steps() == 3
    for b, h in itertools.product(range(3), range(2)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), weights[h * 3 + b])
        assert torch.equal(trace.tensor("output", head=h, step=b), out[h * 3 + b])
    every_cell_matches(trace)


def test_a_hand_made_softmax_and_a_tensor_square_root() -> None:
    torch.manual_seed(15)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    trace, (out, weights) = recorded(mm.handmade_softmax_attention, q, k, v)
    assert trace.names() == PLAIN
    assert torch.equal(trace["output"], out) and torch.equal(trace["weights"], weights)
    every_cell_matches(trace)


def test_one_query_on_the_right_of_the_keys() -> None:
    torch.manual_seed(16)
    query, keys, values = torch.randn(4), torch.randn(5, 4), torch.randn(5, 2)
    trace, (out, weights) = recorded(mm.keys_first_attention, query, keys, values)
    assert trace.names() == PLAIN
    assert torch.equal(trace["query"], query[None]) and torch.equal(trace["key"], keys)
    assert torch.equal(trace["output"], out[None]) and torch.equal(trace["weights"], weights[None])
    every_cell_matches(trace)


def test_the_dtype_minimum_as_a_fill() -> None:
    torch.manual_seed(17)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 2)
    padding = torch.tensor([[0, 0, 0, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    trace, (out, weights) = recorded(mm.finfo_mask_attention, q, k, v, padding)
    masked = trace.stage("masked", step=0).op
    assert masked.fill == repr(torch.finfo(torch.float32).min)
    assert torch.equal(masked.mask.allowed, ~padding[0].expand(3, 5))
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), out[b])
        assert torch.equal(trace.tensor("weights", step=b), weights[b])
    every_cell_matches(trace)


def test_einsum_with_an_ellipsis_and_a_broadcast_batch() -> None:
    torch.manual_seed(18)
    q, k, v = torch.randn(2, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 2)
    with attn_tui.record() as rec:
        weights = (torch.einsum("...id,...jd->...ij", q, k) * 0.5).softmax(-1)
        out = torch.einsum("b h i j, b h j d -> b h i d", weights, v)
    trace = rec.trace
    assert trace.names() == PLAIN and trace.heads == 2 and trace.steps() == 2
    for b, h in itertools.product(range(2), range(2)):
        assert torch.equal(trace.tensor("output", head=h, step=b), out[b, h])
        assert torch.equal(trace.tensor("key", head=h, step=b), k[0, h])
    every_cell_matches(trace)


def test_inference_mode_and_in_place_scaling_and_masking() -> None:
    torch.manual_seed(19)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    padding = torch.tensor([False, False, False, True, True])
    with attn_tui.record() as rec, torch.inference_mode():
        scores = q @ k.T
        scores /= 2.0
        scores.mul_(1.5)
        scores.masked_fill_(padding, float("-inf"))
        weights = torch.softmax(scores, -1)
        out = weights @ v
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "scaled_2", "masked", "weights", "output"]
    assert torch.equal(trace["output"], out) and torch.equal(trace["weights"], weights)
    assert torch.isfinite(trace["scaled_2"]).all()  # kept as they were before the in-place mask
    every_cell_matches(trace)


@pytest.mark.parametrize("case", ["causal_cross", "bool_mask", "float_mask", "unbatched", "gqa", "dropout"])
def test_scaled_dot_product_attention_calls(case: str) -> None:
    torch.manual_seed(20)
    q, k, v = torch.randn(2, 4, 3, 4), torch.randn(2, 4, 5, 4), torch.randn(2, 4, 5, 2)
    allowed = torch.ones(3, 5, dtype=torch.bool).tril()
    kwargs: dict[str, object] = {}
    if case == "causal_cross":
        kwargs = {"is_causal": True}
    elif case == "bool_mask":
        kwargs = {"attn_mask": allowed}
    elif case == "float_mask":
        kwargs = {"attn_mask": torch.zeros(3, 5).masked_fill(~allowed, float("-inf"))}
    elif case == "unbatched":
        q, k, v = q[0, 0], k[0, 0], v[0, 0]
    elif case == "gqa":
        k, v, kwargs = k[:, :2], v[:, :2], {"enable_gqa": True}
    elif case == "dropout":
        kwargs = {"dropout_p": 0.5}
    with attn_tui.record() as rec:
        out = F.scaled_dot_product_attention(q, k, v, **kwargs)
    trace = rec.trace
    masked = case in ("causal_cross", "bool_mask", "float_mask")
    assert trace.names() == ["query", "key", "value", "scores", "scaled", *(["masked"] if masked else []),
                             "weights", "output"]
    slices = [(None, None)] if case == "unbatched" else list(itertools.product(range(2), range(4)))
    for b, h in slices:
        got = trace.tensor("output", head=h, step=b)
        assert torch.equal(got, out if b is None else out[b, h])
        qq, kk = (q, k) if b is None else (q[b, h], k[b, h // 2 if case == "gqa" else h])
        scores = (qq @ kk.T / 2).masked_fill(~allowed, -math.inf) if masked else qq @ kk.T / 2
        assert torch.allclose(trace.tensor("weights", head=h, step=b), scores.softmax(-1), atol=1e-6)
    if case == "dropout":
        assert any("dropout_p=0.5" in str(w) for w in trace.warnings)
    every_cell_matches(trace)


@pytest.mark.parametrize("need_weights", [True, False])
def test_multihead_attention_batch_first_with_padding(need_weights: bool) -> None:
    torch.manual_seed(21)
    module = nn.MultiheadAttention(8, 2, batch_first=True).eval()
    x = torch.randn(2, 4, 8)
    padding = torch.tensor([[False, False, False, True], [False] * 4])
    with attn_tui.record() as rec, torch.no_grad():
        out, _ = module(x, x, x, key_padding_mask=padding, need_weights=need_weights)
    trace = rec.trace
    assert trace.heads == 2 and trace.steps() == 2 and "masked" in trace.names()
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[b])
    assert torch.equal(trace.stage("masked", step=0, head=1).op.mask.allowed, ~padding[0].expand(4, 4))
    every_cell_matches(trace)


def test_multihead_attention_unbatched_cross_attention() -> None:
    torch.manual_seed(22)
    module = nn.MultiheadAttention(8, 2)
    x, memory = torch.randn(3, 8), torch.randn(5, 8)
    with attn_tui.record() as rec:
        out, weights = module(x, memory, memory)
    trace = rec.trace
    assert trace.names()[:2] == ["input", "key_input"] and trace.steps() == 0
    assert torch.equal(trace["projected"], out) and torch.equal(trace["mean_weights"], weights)
    every_cell_matches(trace)


def test_a_model_in_float64() -> None:
    torch.manual_seed(23)
    module = mm.ViewTransposeHeads(8, 2).double().eval()
    x = torch.randn(2, 4, 8, dtype=torch.float64)
    trace, (out, p_attn) = recorded(module, x, x, x)
    assert trace.dtype == "float64"
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[b])
        assert trace.tensor("weights", step=b, head=1).dtype == torch.float64
        assert torch.equal(trace.tensor("weights", step=b, head=1), p_attn[b, 1])
    every_cell_matches(trace)


def test_sdpa_in_float64_keeps_float64_weights() -> None:
    q = torch.randn(3, 4, dtype=torch.float64)
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, q, q)
    assert rec.trace["weights"].dtype == torch.float64
    assert torch.equal(rec.trace["weights"], torch.softmax(q @ q.T / 2, -1))


def test_what_cannot_be_laid_out_still_shows_its_scores_and_weights() -> None:
    """A softmax over every cell of the scores at once is no attention row: shown as given, with a warning."""
    torch.manual_seed(24)
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    with attn_tui.record() as rec:
        weights = torch.softmax((q @ k.T).flatten(), 0)
        pooled = weights @ torch.randn(15, 2)
        single = torch.softmax(torch.tensor(2.0), 0)  # a softmax of one number: nothing to show
    trace = rec.trace
    assert trace.names() == ["scores", "weights"] and pooled.shape == (2,) and float(single) == 1.0
    assert torch.equal(trace["weights"], weights[None])
    assert any("only the scores and weights" in str(w) for w in trace.warnings)
    every_cell_matches(trace)


def test_a_learned_temperature_per_head() -> None:
    torch.manual_seed(25)
    q, k, v = torch.randn(1, 2, 3, 4), torch.randn(1, 2, 5, 4), torch.randn(1, 2, 5, 2)
    temperature = nn.Parameter(torch.tensor([1.0, 2.0]).view(2, 1, 1))
    with attn_tui.record() as rec:
        weights = ((q @ k.transpose(-2, -1)) / temperature).softmax(-1)
        out = weights @ v
    trace = rec.trace
    assert trace.names() == PLAIN and trace.heads == 2
    assert [trace.stage("scaled", head=h).op.factor for h in range(2)] == [1.0, 0.5]
    for h in range(2):
        assert torch.equal(trace.tensor("output", head=h), out[0, h])
        assert torch.equal(trace.tensor("weights", head=h), weights[0, h])
    every_cell_matches(trace)


def test_heads_split_by_stack_and_merged_by_cat() -> None:
    torch.manual_seed(35)
    wq, wk, wv, wo = (nn.Linear(8, 8) for _ in range(4))
    x = torch.randn(2, 3, 8)
    with attn_tui.record() as rec:
        q, k, v = (torch.stack(w(x).split(4, dim=-1), dim=1) for w in (wq, wk, wv))
        out = torch.softmax(q @ k.transpose(-2, -1) / 2, -1) @ v
        projected = wo(torch.cat([out[:, 0], out[:, 1]], dim=-1))
    trace = rec.trace
    assert trace.names() == SELF[:5] + ["scaled", "weights", "output", "concat", "projected"]
    assert trace.stage("value", head=1).op.offset == 4
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), projected[b])
    every_cell_matches(trace)


def test_the_annotated_transformers_heads_from_a_list_comprehension() -> None:
    torch.manual_seed(26)
    module = mm.MultiHeadedAttention(2, 8).eval()
    x = torch.randn(2, 4, 8)
    mask = torch.ones(2, 1, 4)
    mask[0, 0, 3] = 0
    trace, out = recorded(module, x, x, x, mask)
    assert trace.meta.modules == ("MultiHeadedAttention",) and trace.names() == SELF
    assert trace.stage("key", head=1).op.weight == "linears.1.weight"
    assert trace.stage("projected").op.weight == "linears.3.weight"
    for b, h in itertools.product(range(2), range(2)):
        assert torch.equal(trace.tensor("weights", head=h, step=b), module.attn[b, h])
    for b in range(2):
        assert torch.equal(trace.tensor("projected", step=b), out[b])
    every_cell_matches(trace)


def test_concat_scores_with_expand_and_a_linear_v() -> None:
    torch.manual_seed(27)
    module = mm.ConcatExpand(4)
    hidden, outputs = torch.randn(2, 4), torch.randn(2, 5, 4)
    trace, (context, weights) = recorded(module, hidden, outputs)
    assert trace.names() == ["query", "key", "energy", "scores", "weights", "output"]
    assert isinstance(trace.stage("energy").op, TanhOfPair) and trace.stage("scores").op.vector == "v.weight"
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), context[b][None])
        assert torch.equal(trace.tensor("weights", step=b), weights[b][None])
    every_cell_matches(trace)


def test_bahdanau_over_a_bidirectional_gru_with_an_einsum_context() -> None:
    torch.manual_seed(28)
    module = mm.BiGRUAttention(4)
    x, state = torch.randn(2, 6, 3), torch.randn(2, 4)
    trace, (context, weights) = recorded(module, x, state)
    assert trace.names() == ["query", "query_proj", "key", "key_proj", "energy", "scores", "weights", "output"]
    assert trace.tensor("key", step=0).shape == (6, 8)  # both directions of the encoder
    for b in range(2):
        assert torch.equal(trace.tensor("output", step=b), context[b][None])
        assert torch.equal(trace.tensor("weights", step=b), weights[b][None])
    every_cell_matches(trace)


@pytest.mark.parametrize("form", ["log_softmax", "logsumexp", "two_exps"])
def test_softmax_written_other_ways(form: str) -> None:
    torch.manual_seed(29)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    with attn_tui.record() as rec:
        scores = q @ k.T
        if form == "log_softmax":
            weights = F.log_softmax(scores, dim=-1).exp()
        elif form == "logsumexp":
            weights = torch.exp(scores - torch.logsumexp(scores, dim=-1, keepdim=True))
        else:
            weights = mm.softmax(scores)
        out = weights @ v
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "weights", "output"]
    assert torch.equal(trace["weights"], weights) and torch.equal(trace["output"], out)
    every_cell_matches(trace)


def test_weights_of_which_the_code_drops_a_column_are_shown_whole() -> None:
    """softmax([scores | sink])[:, :-1] @ v: the weights the product reads are not softmax rows of their own."""
    torch.manual_seed(30)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    with attn_tui.record() as rec:
        weights = torch.softmax(torch.cat([q @ k.T / 2, torch.zeros(3, 1)], dim=-1), -1)
        weights[:, :-1] @ v
    trace = rec.trace
    assert trace.names() == ["scores", "weights"] and trace["weights"].shape == (3, 6)
    assert torch.equal(trace["weights"], weights)
    every_cell_matches(trace)


def test_a_mask_before_the_scaling_is_no_overflow() -> None:
    torch.manual_seed(31)
    q = torch.randn(1, 6, 4)
    band = (torch.arange(6)[None, :] - torch.arange(6)[:, None]).abs() <= 1
    with attn_tui.record() as rec:
        scores = (q @ q.transpose(1, 2)).masked_fill(~band, float("-inf"))
        weights = F.softmax(scores / 2, dim=-1)
        out = weights @ q
    trace = rec.trace
    assert trace.names() == ["query", "key", "scores", "masked", "scaled", "weights", "output"]
    assert not trace.warnings and trace.mask_of(trace.stage("scaled")) is not None
    assert torch.equal(trace["output"], out[0])
    every_cell_matches(trace)


def test_sdpa_in_a_module_called_three_times_gives_steps() -> None:
    torch.manual_seed(32)
    qkv, proj = nn.Linear(8, 24), nn.Linear(8, 8)

    def block(x):
        q, k, v = qkv(x).view(2, 3, 3, 2, 4).unbind(2)
        y = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return proj(y.transpose(1, 2).reshape(2, 3, 8))

    x = torch.randn(2, 3, 8)
    with attn_tui.record() as rec:
        outs = [block(x + t) for t in range(3)]
    trace = rec.trace
    assert trace.heads == 2 and trace.steps() == 6 and trace.meta.calls == (3,)
    assert trace.names() == ["input", "qkv_proj", *SELF[1:]]
    for t, b in itertools.product(range(3), range(2)):
        assert torch.equal(trace.tensor("projected", step=2 * t + b), outs[t][b])
    every_cell_matches(trace)


def test_attn_tuis_own_work_inside_a_recorded_block_is_not_recorded() -> None:
    """Asking for the trace, showing it or computing a variant inside the block records none of attn-tui's own math."""
    torch.manual_seed(33)
    q = torch.randn(2, 3, 4)
    with attn_tui.record() as outer:
        with attn_tui.record() as inner:
            out = F.scaled_dot_product_attention(q, q, q)
            early = inner.trace
            repr(early)
            attn_tui.compute("a b c", variant="multihead", heads=2)
            F.scaled_dot_product_attention(q, q, q)
        weights = torch.softmax(q @ q.transpose(1, 2), -1)
    assert early.meta.calls == (1,) and inner.trace.meta.calls == (2,)  # asked early: what ran so far
    assert torch.equal(early.tensor("output", step=1), out[1])
    assert outer.trace.meta.modules == ("test_attn_tuis_own_work_inside_a_recorded_block_is_not_recorded",)
    assert outer.trace.meta.calls == (3,)  # two SDPA calls and the softmax, all the code's own
    assert torch.equal(outer.trace.tensor("weights", step=5), weights[1])


@pytest.mark.parametrize("change", ["masked_fill", "renormalise", "nan_to_num"])
def test_weights_changed_after_the_softmax(change: str) -> None:
    """Padding zeroed, rows renormalised, NaN replaced after the softmax: the output uses those weights."""
    torch.manual_seed(34)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    keep = torch.tensor([1.0, 1, 1, 0, 0])
    with attn_tui.record() as rec:
        weights = torch.softmax(q @ k.T, dim=-1)
        if change == "masked_fill":
            used = weights.masked_fill(keep == 0, 0.0)
        elif change == "renormalise":
            used = weights * keep
            used = used / used.sum(dim=-1, keepdim=True)
        else:
            used = torch.nan_to_num(weights, nan=0.0)
        out = used @ v
    trace = rec.trace
    expected = ["query", "key", "value", "scores", "weights", "output"]
    if change != "nan_to_num":  # nothing to replace: the weights the values meet are the softmax itself
        expected.insert(5, "reweighted")
        assert torch.equal(trace["reweighted"], used)
    assert trace.names() == expected
    assert torch.equal(trace["weights"], weights) and torch.equal(trace["output"], out)
    every_cell_matches(trace)


def test_a_failure_of_the_recorder_itself_is_one_clear_error(monkeypatch) -> None:
    from attn_tui.sources.recorder import build
    from attn_tui.sources.recorder.build import NoAttentionError

    def broken(*args, **kwargs):
        raise IndexError("index 7 is out of bounds")

    monkeypatch.setattr(build, "_add_slice", broken)
    q = torch.randn(3, 4)
    with attn_tui.record() as rec:
        torch.softmax(q @ q.T, -1) @ q
    with pytest.raises(NoAttentionError, match=r"could not lay out what the code computed \(IndexError: index 7"):
        _ = rec.trace


def test_a_full_size_mask_added_on_the_left() -> None:
    torch.manual_seed(36)
    q, k, v = torch.randn(2, 3, 4), torch.randn(2, 3, 4), torch.randn(2, 3, 2)
    mask = torch.zeros(2, 3, 3).masked_fill(torch.ones(3, 3, dtype=torch.bool).triu(1), -1e9)
    with attn_tui.record() as rec:
        weights = F.softmax(mask + q @ k.transpose(1, 2), dim=-1)
        out = weights @ v
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "masked", "weights", "output"]
    assert torch.equal(trace.tensor("scores", step=1), (q @ k.transpose(1, 2))[1])
    assert torch.equal(trace.tensor("output", step=1), out[1])
    every_cell_matches(trace)


def test_a_mask_written_as_a_product_and_a_sum() -> None:
    """`scores * mask + (1 - mask) * -1e9`: one masking, of the scores themselves."""
    torch.manual_seed(37)
    q, k, v = torch.randn(3, 4), torch.randn(3, 4), torch.randn(3, 2)
    mask = torch.ones(3, 3).tril()
    with attn_tui.record() as rec:
        scores = q @ k.T / 2
        scores = scores * mask + (1 - mask) * -1e9
        out = F.softmax(scores, dim=-1) @ v
    trace = rec.trace
    assert trace.names() == ["query", "key", "value", "scores", "scaled", "masked", "weights", "output"]
    assert torch.equal(trace.stage("masked").op.mask.allowed, mask.bool())
    assert torch.equal(trace["output"], out)
    every_cell_matches(trace)
