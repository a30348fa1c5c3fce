"""Head roles against float64 loops written from the formulas, and on hand-built pure heads."""

from __future__ import annotations

import math
import random

import pytest
import torch

from attn_tui.attention.head_roles import breadth, detection_patterns, head_roles, role_scores
from attn_tui.trace.model_stats import ROLE_NAMES


def _loop_patterns(tokens: list[int]) -> dict[str, list[list[float]]]:
    n = len(tokens)
    previous = [[1.0 if j == i - 1 else 0.0 for j in range(n)] for i in range(n)]
    duplicate = [[1.0 if j < i and tokens[j] == tokens[i] else 0.0 for j in range(n)] for i in range(n)]
    induction = [[1.0 if j >= 1 and j - 1 < i and tokens[j - 1] == tokens[i] else 0.0 for j in range(n)]
                 for i in range(n)]
    return {"previous_token": previous, "duplicate_token": duplicate, "induction": induction}


def _loop_score(a: list[list[float]], p: list[list[float]]) -> float:
    n = len(a)
    return sum(a[i][j] * p[i][j] for i in range(n) for j in range(n)) / sum(map(sum, a))


def _causal_random(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    scores = torch.randn(2, 3, n, n, generator=g, dtype=torch.float64)
    return torch.softmax(scores.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf")), -1)


@pytest.mark.parametrize("seed", range(4))
def test_role_scores_equal_float64_loops_of_the_formulas(seed: int) -> None:
    rng = random.Random(seed)
    tokens = [rng.randrange(5) for _ in range(11)]
    weights = _causal_random(11, seed)  # (2, 3, 11, 11)
    got = role_scores(weights, tokens)
    patterns = _loop_patterns(tokens)
    for layer in range(2):
        for head in range(3):
            a = weights[layer, head].tolist()
            expected = {name: _loop_score(a, p) for name, p in patterns.items()}
            expected["sink"] = sum(row[0] for row in a) / len(a)
            expected["local"] = _loop_score(a, [[1.0 if abs(i - j) <= 2 else 0.0 for j in range(11)]
                                                for i in range(11)])
            expected["entropy"] = sum(-sum(x * math.log(x) for x in row if x > 0) for row in a) / len(a)
            for index, name in enumerate(ROLE_NAMES):
                assert got[layer, head, index].item() == pytest.approx(expected[name], abs=1e-6), name


def test_the_patterns_equal_the_loops() -> None:
    tokens = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 3, 1, 4]
    for name, pattern in detection_patterns(tokens).items():
        assert pattern.tolist() == _loop_patterns(tokens)[name], name


def _one_hot_rows(targets: list[int]) -> torch.Tensor:
    n = len(targets)
    a = torch.zeros(1, 1, n, n)
    for i, j in enumerate(targets):
        a[0, 0, i, j] = 1.0
    return a


def test_pure_heads_score_one_on_their_role() -> None:
    half = [7, 2, 9, 4, 1, 8]
    tokens = half + half  # the induction probe: a random sequence repeated
    n = len(tokens)
    previous = _one_hot_rows([max(i - 1, 0) for i in range(n)])
    previous[0, 0, 0, 0] = 0.0  # the first row has no previous token; leave it empty
    induction = _one_hot_rows([i - len(half) + 1 if i >= len(half) else 0 for i in range(n)])
    induction[0, 0, :len(half)] = 0.0  # the first half has nothing to copy from
    sink = _one_hot_rows([0] * n)
    duplicate = _one_hot_rows([i - len(half) if i >= len(half) else 0 for i in range(n)])
    duplicate[0, 0, :len(half)] = 0.0
    for weights, role in ((previous, "previous_token"), (induction, "induction"), (sink, "sink"),
                          (duplicate, "duplicate_token")):
        (roles,) = head_roles(weights, tokens)
        assert roles.scores[role] == pytest.approx(1.0), role
    (uniform,) = head_roles(torch.ones(1, 1, n, n).tril() / torch.arange(1, n + 1)[:, None], tokens)
    assert uniform.breadth == pytest.approx((n - 1) / n)  # every row but the first (one choice, no spread)


def test_padding_takes_no_part() -> None:
    tokens = ["나는", "학교에", "<pad>"]
    weights = torch.tensor([[[[1.0, 0, 0], [0.5, 0.5, 0], [0.2, 0.3, 0.5]]]])
    real = torch.tensor([True, True, False])
    got = role_scores(weights, tokens, real)
    assert got[0, 0, ROLE_NAMES.index("sink")].item() == pytest.approx(0.75)
    assert breadth(weights, real)[0, 0].item() == pytest.approx(0.5)
