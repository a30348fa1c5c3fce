"""Head statistics and rollout against loops written from their definitions."""

from __future__ import annotations

import math

import torch

from attn_tui.attention.summary import head_stats, rollout


def _random_weights(layers: int, heads: int, n: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(0)
    return torch.softmax(torch.randn(layers, heads, n, n, generator=gen) * 2, dim=-1)


def test_head_stats_match_loops() -> None:
    w = _random_weights(2, 3, 5)
    real = torch.tensor([True, True, True, True, False])
    stats = head_stats(w, real)
    assert len(stats) == 6
    for s in stats:
        rows = [w[s.layer, s.head, i].tolist() for i in range(4)]
        entropy = sum(-sum(p * math.log(p) for p in row if p > 0) for row in rows) / 4
        assert abs(s.entropy - entropy) < 1e-5
        assert abs(s.max_weight - sum(max(r) for r in rows) / 4) < 1e-6  # each row's largest, averaged
        assert abs(s.first_token_share - sum(r[0] for r in rows) / 4) < 1e-6


def test_the_largest_weight_leaves_out_rows_with_one_key() -> None:
    """A causal head's first row weighs its only key 1.0 whatever the head does: it says nothing of the head."""
    torch.manual_seed(3)
    scores = torch.randn(1, 2, 5, 5).masked_fill(~torch.ones(5, 5, dtype=torch.bool).tril(), float("-inf"))
    w = scores.softmax(-1)  # (1, 2, 5, 5): row 0 is [1, 0, 0, 0, 0]
    for s in head_stats(w, torch.ones(5, dtype=torch.bool)):
        rows = [w[s.layer, s.head, i].tolist() for i in range(1, 5)]  # the rows with a choice
        assert abs(s.max_weight - sum(max(r) for r in rows) / 4) < 1e-6 and s.max_weight < 1


def test_rollout_matches_loop_and_rows_sum_to_one() -> None:
    w = _random_weights(3, 2, 4)
    n = 4
    expected = [[float(i == j) for j in range(n)] for i in range(n)]
    for layer in range(3):
        mixed = [[0.5 * sum(w[layer, h, i, j].item() for h in range(2)) / 2 + 0.5 * (i == j) for j in range(n)]
                 for i in range(n)]
        mixed = [[x / sum(row) for x in row] for row in mixed]
        expected = [[sum(mixed[i][k] * expected[k][j] for k in range(n)) for j in range(n)] for i in range(n)]
    got = rollout(w)
    assert torch.allclose(got, torch.tensor(expected), atol=1e-6)
    assert torch.allclose(got.sum(-1), torch.ones(n), atol=1e-6)


def test_rollout_keeps_padding_out() -> None:
    w = _random_weights(2, 2, 4)
    real = torch.tensor([True, True, True, False])
    assert torch.all(rollout(w, real)[:, 3] == 0)
