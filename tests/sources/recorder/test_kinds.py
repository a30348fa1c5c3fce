"""The one table of what each recorded call does, and the kinds the recognisers' questions are asked of."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attn_tui.sources.recorder.capture import Recorder
from attn_tui.sources.recorder.chain import BACK_STEPS, Chain
from attn_tui.sources.recorder.fused import unfused
from attn_tui.sources.recorder.kinds import CASTS, CHANGED_AFTER_SOFTMAX, KINDS, NAMES, PASSES, VIEWS, After, Kind
from attn_tui.sources.recorder.node import Node, walk
from attn_tui.sources.recorder.recognise import softmax_input
from attn_tui.sources.recorder.refs import whole

# The names each recogniser relies on, with what it means by them.
MEANT = {
    Kind.CONTRACT: ("matmul", "rmatmul", "mm", "bmm", "einsum"),  # a product of two tensors
    Kind.FUSED: ("baddbmm", "addmm"),  # taken apart into a product, a scale and a sum
    Kind.SCALE: ("mul", "div"),  # by a number, a gate, a factor per slice
    Kind.MASK: ("masked_fill", "where"),
    Kind.WRITE: ("setitem",),
    Kind.MAX: ("max", "amax"),  # softmax's shift
    Kind.CAT: ("cat", "stack"),  # pieces of one node joined again
    Kind.SOFTMAX: ("softmax", "log_softmax"),
    Kind.ATTENTION: ("scaled_dot_product_attention", "multi_head_attention_forward", "flex_attention"),
    Kind.LINEAR: ("linear",), Kind.SUM: ("sum",), Kind.TANH: ("tanh",), Kind.LEAF: ("leaf",),
}
VIEW_NAMES = {"view", "reshape", "permute", "transpose", "t", "T", "mT", "squeeze", "unsqueeze", "contiguous",
             "getitem", "select", "narrow", "expand", "expand_as", "repeat", "flatten", "unflatten", "movedim",
             "moveaxis", "swapaxes", "swapdims", "view_as", "reshape_as", "chunk", "split", "unbind", "tensor_split",
             "clone", "detach", "data", "squeeze_", "unsqueeze_", "transpose_", "t_", "repeat_interleave"}
PASS_NAMES = {"cast", "dropout", "contiguous", "clone"}
AFTER_SOFTMAX_NAMES = {"mul", "div", "masked_fill", "where", "nan_to_num"}
OP_NAMES = {"linear", "matmul", "rmatmul", "mm", "bmm", "einsum", "baddbmm", "addmm", "softmax", "log_softmax",
           "logsumexp", "add", "sub", "rsub", "mul", "div", "true_divide", "masked_fill", "where", "tanh", "exp",
           "sum", "amax", "max", "cat", "concat", "stack", "setitem", "dropout", "scaled_dot_product_attention",
           "multi_head_attention_forward", "neg", "nan_to_num", "scatter", "sort", "pad",
           "eq", "ne", "lt", "le", "gt", "ge"}


def test_every_name_the_recognisers_rely_on_has_the_kind_they_mean() -> None:
    for kind, names in MEANT.items():
        assert {KINDS[name] for name in names} == {kind}, kind
    assert {name for name, kind in KINDS.items() if kind in VIEWS} == VIEW_NAMES
    assert {name for name, kind in KINDS.items() if kind in PASSES} - CASTS == PASS_NAMES
    assert {name for name, kind in KINDS.items() if kind in CHANGED_AFTER_SOFTMAX} - {"true_divide"} \
        == AFTER_SOFTMAX_NAMES


def test_the_table_names_each_call_once_and_every_call_the_recorder_kept() -> None:
    every = [name for names in NAMES.values() for name in names]
    assert len(every) == len(set(every))
    assert set(KINDS) == OP_NAMES | VIEW_NAMES | CASTS | {"cast", "leaf", "flex_attention"}


def test_each_node_gets_its_kind_when_it_is_recorded() -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 2, 4, 8).unbind(0)
    causal = torch.ones(4, 4).tril()
    with Recorder() as recorder:
        scores = torch.baddbmm(torch.zeros(2, 4, 4), q, k.transpose(1, 2), alpha=0.5)
        weights = F.softmax(scores.masked_fill(causal == 0, float("-inf")).double(), dim=-1)
        torch.relu(weights)  # no call attention is made of: not recorded
        weights @ v.double()
    (anchor,) = [node for calls in recorder.anchors.values() for node in calls]
    nodes = list(walk([anchor]))
    assert {node.name for node in nodes} == {"softmax", "cast", "masked_fill", "eq", "baddbmm", "transpose", "leaf"}
    assert all(node.kind is KINDS[node.name] for node in nodes)
    assert [c.kind for c in anchor.consumers] == [Kind.CONTRACT]
    baddbmm = next(node for node in nodes if node.name == "baddbmm")
    parts = unfused(baddbmm)
    assert parts is not None and all(node.kind is KINDS[node.name] for node in walk([parts]) if node is not baddbmm)


def test_the_walk_back_from_a_softmax_tries_the_steps_its_table_gives_each_kind() -> None:
    torch.manual_seed(1)
    q, k = torch.randn(2, 3, 4).unbind(0)
    with Recorder() as recorder:
        F.softmax((q @ k.T / 2).masked_fill(torch.eye(3, dtype=torch.bool), -1e9).contiguous(), dim=-1)
    (anchor,) = [node for calls in recorder.anchors.values() for node in calls]
    source = softmax_input(anchor)
    assert isinstance(source, Node)
    chain = Chain()
    made, scores = chain.walk(whole(source))
    assert made == "product" and scores.node is not None and scores.node.kind is Kind.CONTRACT
    assert [step[0] for step in chain.steps] == ["masked", "scaled"]
    assert Kind.SOFTMAX not in BACK_STEPS and Kind.OTHER not in BACK_STEPS  # a call no step fits: the scores given


def test_the_way_onwards_follows_the_pattern_the_recognisers_read_however_long_and_no_further() -> None:
    torch.manual_seed(2)
    q, k, v = torch.randn(3, 2, 5, 4).unbind(0)
    project = torch.nn.Linear(8, 8)
    with Recorder() as recorder:
        weights = F.softmax(q @ k.transpose(-1, -2), dim=-1)  # (2, 5, 5)
        for _ in range(20):  # views and casts, any number of them, before the product with the values
            weights = weights.unsqueeze(0).squeeze(0).float()
        output = weights @ v  # (2, 5, 4)
        joined = output.transpose(0, 1).reshape(5, 8)  # the heads side by side
        projected = project(joined)
        (projected + joined).sum()  # the residual after the projection: not on the way
    (anchor,) = [node for calls in recorder.anchors.values() for node in calls]
    on_the_way = list(walk([anchor], lambda node: node.consumers))
    assert {node.after for node in on_the_way} == {After.ANCHOR, After.WEIGHTS, After.OUTPUT, None}
    # the projection and the residual that reads the concat are linked, and the way ends at them
    assert sorted(node.name for node in on_the_way if node.after is None) == ["add", "linear"]
    assert sum(node.name == "matmul" and node.after is After.OUTPUT for node in on_the_way) == 1
    assert not any(node.name == "sum" for node in on_the_way)
