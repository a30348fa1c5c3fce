"""--bias: learned projections add a seeded bias as nn.Linear does, in the formula and in every cell's arithmetic."""

from __future__ import annotations

import itertools

import pytest
import torch
from torch import nn

from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
from attn_tui.attention.engine import compute
from attn_tui.explain.cell import explain
from attn_tui.trace.ops import Place

F64 = torch.float64


def _ask(variant: str, **settings: object) -> VariantAsk:
    return VariantAsk(SentenceInput("나는 학교에 간다 오늘"), Settings.of(variant=variant, dim=8, bias=True,
                                                                   dtype="float64", **settings))


@pytest.mark.parametrize(("variant", "heads"), [("scaled_dot", 1), ("alibi", 2), ("additive", 1)])
def test_every_cell_with_a_bias_is_recomputed_by_the_inspector(variant: str, heads: int) -> None:
    trace = compute(_ask(variant, heads=heads))
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches, (stage.key, index, arithmetic)
    named = "query_proj" if variant == "additive" else "query"
    place = Place(named, head=0) if heads > 1 else Place(named)
    assert "+ b_" in "\n".join(explain(trace, place, (1, 0)).lines)  # the bias is a line of the arithmetic


def test_the_projections_are_nn_linear_with_its_bias() -> None:
    trace = compute(_ask("scaled_dot"))
    x = trace.tensor("embedding")  # (N, d): X, the tokens' vectors
    for letter in "qkv":
        layer = nn.Linear(8, 8, dtype=F64)
        with torch.no_grad():
            layer.weight.copy_(trace.params[f"W_{letter}"])
            layer.bias.copy_(trace.params[f"b_{letter}"])
            expected = layer(x)
        torch.testing.assert_close(trace.tensor({"q": "query", "k": "key", "v": "value"}[letter]), expected)
        bias = trace.params[f"b_{letter}"]
        assert bias.abs().max() <= 8**-0.5 and bias.abs().sum() > 0  # nn.Linear's U(−1/√in, 1/√in)
    assert trace.stage("query").formula == "Q = X·W_qᵀ + b_q"
    plain = compute(VariantAsk(SentenceInput("나는 학교에 간다 오늘"), Settings.of(dim=8, dtype="float64")))
    assert "b_q" not in plain.params and plain.stage("query").formula == "Q = X·W_qᵀ"
    torch.testing.assert_close(plain.params["W_q"], trace.params["W_q"])  # the bias shifts no other draw
