"""The recorder's bookkeeping: several modules, calls kept, training in between, code that overwrites tensors."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.build import NoAttentionError
from tests.sources.recorder import modules as m
from tests.sources.recorder.test_parity import every_cell_matches


def test_two_modules_are_two_modules_and_their_calls_are_steps() -> None:
    torch.manual_seed(0)
    encoder, decoder = m.SelfAttention(4), m.BahdanauAttention(4)
    x = torch.randn(1, 3, 4)
    with attn_tui.record() as rec:
        keys, _ = encoder(x)
        contexts = [decoder(torch.randn(1, 1, 4), keys)[0] for _ in range(2)]
    trace = rec.trace
    assert trace.modules() == ["SelfAttention", "BahdanauAttention"]
    assert trace.meta.modules == ("SelfAttention", "BahdanauAttention") and trace.meta.calls == (1, 2)
    assert trace.stage("output", module="SelfAttention").step is None
    for t in range(2):
        assert torch.equal(trace.tensor("output", step=t, module="BahdanauAttention"), contexts[t][0])
    assert trace.stage("weights", module="SelfAttention").key == "SelfAttention.weights"
    every_cell_matches(trace)


def test_two_instances_of_one_class_are_told_apart() -> None:
    first, second = m.SelfAttention(4), m.SelfAttention(4)
    with attn_tui.record() as rec:
        second(first(torch.randn(1, 2, 4))[0])
    assert rec.trace.modules() == ["SelfAttention", "SelfAttention#2"]


@pytest.mark.parametrize("make", [lambda ps: torch.optim.SGD(ps, lr=0.5),
                                  lambda ps: torch.optim.SGD(ps, lr=0.5, foreach=True),
                                  lambda ps: torch.optim.Adam(ps, lr=0.5, fused=True)],
                         ids=["sgd", "foreach", "fused"])
def test_training_in_between_keeps_each_calls_own_parameters(make) -> None:
    """An optimizer step changes the weights in place (one by one, or as a list: foreach and fused steps); each call
    recomputes with the weights it ran with (copied only when the step changes them)."""
    torch.manual_seed(1)
    module = m.SelfAttention(4)
    optimizer = make(module.parameters())
    x = torch.randn(1, 3, 4)
    outputs = []
    with attn_tui.record() as rec:
        for _ in range(3):
            output, _ = module(x)
            outputs.append(output.detach().clone())
            output.sum().backward()
            optimizer.step()
            optimizer.zero_grad()
    trace = rec.trace
    assert trace.steps() == 3
    for t in range(3):
        assert torch.equal(trace.tensor("output", step=t), outputs[t][0])
    every_cell_matches(trace)


def test_only_the_last_calls_are_kept_with_a_warning() -> None:
    module = m.SelfAttention(2)
    with attn_tui.record(max_calls=4) as rec:
        for _ in range(10):
            last, _ = module(torch.randn(1, 2, 2))
    trace = rec.trace
    assert trace.steps() == 4 and trace.meta.calls == (10,) and trace.meta.shown == (4,)
    assert torch.equal(trace.tensor("output", step=3), last[0])
    assert any("ran 10 times" in str(w) for w in trace.warnings)


def test_a_tensor_overwritten_after_use_is_kept_as_it_was() -> None:
    q = torch.randn(3, 4)
    with attn_tui.record() as rec:
        scores = q @ q.T
        weights = torch.softmax(scores, dim=-1)
        kept = weights.clone()
        output = weights @ q
        weights.zero_()  # the code reuses the buffer afterwards
        scores.add_(100)
    trace = rec.trace
    assert torch.equal(trace["weights"], kept)
    assert torch.equal(trace["scores"], q @ q.T) and torch.equal(trace["output"], output)


def test_dropout_in_training_mode_is_its_own_stage() -> None:
    torch.manual_seed(2)
    q = torch.randn(4, 3)
    with attn_tui.record() as rec:
        weights = torch.softmax(q @ q.T, dim=-1)
        output = F.dropout(weights, 0.5, training=True) @ q
    trace = rec.trace
    assert "dropped" in trace.names() and torch.equal(trace["output"], output)
    assert any("dropout" in str(w) for w in trace.warnings)
    every_cell_matches(trace)


def test_a_fully_masked_row_of_the_codes_softmax_is_reported_not_silent() -> None:
    q = torch.randn(2, 3)
    mask = torch.tensor([[1, 1], [0, 0]])
    with attn_tui.record() as rec:
        weights = torch.softmax((q @ q.T).masked_fill(mask == 0, float("-inf")), dim=-1)
        weights @ q
    trace = rec.trace
    assert torch.isnan(trace["weights"][1]).all()
    assert any("NaN" in str(w) for w in trace.warnings)


def test_nothing_to_show_is_an_error_that_says_so() -> None:
    with attn_tui.record() as rec:
        torch.ones(3) + 1
    with pytest.raises(NoAttentionError, match="no softmax"):
        _ = rec.trace


def test_recording_leaves_the_codes_results_alone() -> None:
    torch.manual_seed(3)
    module = nn.MultiheadAttention(4, 2).eval()
    x = torch.randn(3, 1, 4)
    expected = module(x, x, x)[0]
    with attn_tui.record():
        got = module(x, x, x)[0]
    assert torch.allclose(got, expected, atol=1e-6)


def test_label_outside_a_recording_does_nothing() -> None:
    attn_tui.label(["a", "b"])  # no error, no state
    with attn_tui.record() as rec:
        attn_tui.label(["a", "b"])
        m.attention(torch.randn(2, 3), torch.randn(2, 3), torch.randn(2, 3))
    assert rec.trace.query_tokens == ("a", "b")


class TwoBlocks(nn.Module):
    """A model with attention in blocks, and two of one class side by side: named by their paths in it."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Module() for _ in range(2)])
        for block in self.blocks:
            block.attn = m.SelfAttention(4)
        self.enc_attn, self.dec_attn = m.BahdanauAttention(4), m.BahdanauAttention(4)
        self.lone = m.MultiHeadAttention(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block.attn(x)[0]
        self.enc_attn(x[:, :1], x)
        self.dec_attn(x[:, 1:2], x)
        return self.lone(x, None)[0]


def test_modules_are_named_by_their_path_when_it_says_more_than_their_class() -> None:
    torch.manual_seed(3)
    model = TwoBlocks().eval()
    with torch.no_grad(), attn_tui.record() as rec:
        model(torch.randn(1, 3, 4))
    assert rec.trace.meta.modules == ("blocks.0.attn", "blocks.1.attn", "enc_attn", "dec_attn", "MultiHeadAttention")


def test_a_model_recorded_again_names_its_parameters_as_the_first_time() -> None:
    """Parameter names found in one recording are reused by the next (param_names.KNOWN); a parameter put in
    place of another is a new one, and is named where it now is."""
    from attn_tui.sources.recorder import param_names

    torch.manual_seed(6)
    module = m.SelfAttention(4)
    x = torch.randn(1, 3, 4)
    named = []
    for _ in range(2):
        with attn_tui.record() as rec:
            module(x)
        named.append(sorted(rec.trace.params))
        assert id(module.query.weight) in param_names.KNOWN
    assert named[0] == named[1] and "query.weight" in named[0] and "key.weight" in named[0]
    module.key.weight = nn.Parameter(module.query.weight.detach().clone() * 2)
    with attn_tui.record() as rec:
        module(x)
    assert torch.equal(rec.trace.params["key.weight"], module.key.weight.detach())
