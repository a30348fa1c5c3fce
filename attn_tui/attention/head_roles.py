"""What each head does: its scores as a previous-token, duplicate-token, induction, sink, local or broad head.

The three token-pattern scores follow TransformerLens's `detect_head` with its default options
(`exclude_bos=False`, `exclude_current_token=False`, `error_measure="mul"`): a detection pattern P
is built from the token identities, and a head's score is Σ(A ⊙ P) / ΣA over the whole sequence, the
share of all its attention that lands where the pattern says. The others read the weights alone:
`sink` is the mean weight on key 0, `local` the share within ±2 positions, `entropy` the mean row
entropy in nats.

On the induction probe (a random sequence r + r, sources/probe.py) only the repeated half's query rows are
scored, as Olsson et al. (2022) and TransformerLens's induction score read it: the first half has nothing to
copy, so over the whole sequence even a perfect induction head would score about ½.

Plain formulas (A: (N, N) one head's weights, t: the N token identities):
    previous[i, j]  = 1 if j == i − 1
    duplicate[i, j] = 1 if j < i and t[j] == t[i]
    induction[i, j] = 1 if 1 ≤ j ≤ i and t[j − 1] == t[i] and j − 1 < i
    score(A, P)     = (A * P).sum() / A.sum()
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch

from attn_tui.trace.model_stats import ROLE_NAMES, HeadRoles

LOCAL_REACH = 2  # `local`: keys within this many positions of the query


def detection_patterns(tokens: Sequence[Hashable]) -> dict[str, torch.Tensor]:
    """The three patterns, each (N, N) float32 of 0 and 1, from the N token identities (ids or strings)."""
    n = len(tokens)
    codes: dict[Hashable, int] = {}
    ids = torch.tensor([codes.setdefault(t, len(codes)) for t in tokens], dtype=torch.long)  # (N,)
    below = torch.ones(n, n, dtype=torch.bool).tril(-1)  # (N, N) j < i
    duplicate = (ids[:, None] == ids[None, :]) & below  # (N, N)
    induction = torch.zeros(n, n, dtype=torch.bool)
    induction[:, 1:] = duplicate[:, :-1]  # P[i, j] = duplicate[i, j − 1]; j − 1 < i already means j ≤ i
    previous = torch.zeros(n, n, dtype=torch.bool)
    previous[1:, :-1] = torch.eye(n - 1, dtype=torch.bool) if n > 1 else previous[1:, :-1]
    return {"previous_token": previous.float(), "duplicate_token": duplicate.float(), "induction": induction.float()}


def _kept(weights: torch.Tensor, real: torch.Tensor | None, rows: torch.Tensor | None) -> torch.Tensor:
    """weights in float64 with padding's rows and columns, and the query rows not scored, set to 0."""
    a = weights.double()  # (layers, heads, N, N)
    if real is not None:
        a = a * (real[:, None] & real[None, :]).to(a.device)  # (N, N)
    if rows is not None:
        a = a * rows[:, None].to(a.device)
    return a


def role_scores(weights: torch.Tensor, tokens: Sequence[Hashable],
                real: torch.Tensor | None = None, rows: torch.Tensor | None = None) -> torch.Tensor:
    """(layers, heads, len(ROLE_NAMES)) every head's score on every role, from weights (layers, heads, N, N).

    `real` (N,) bool keeps padding out: its rows and columns take no part in any score. `rows` (N,) bool: the
    query rows scored (the induction probe's repeated half, where a copy can happen); None scores every row.
    """
    n = weights.shape[-1]
    if len(tokens) != n:
        raise ValueError(f"{len(tokens)} token identities for {n} positions")
    a = _kept(weights, real, rows)  # (layers, heads, N, N)
    total = a.sum(dim=(-1, -2)).clamp_min(1e-30)  # (layers, heads)
    patterns = detection_patterns(tokens)
    scores: dict[str, torch.Tensor] = {
        name: (a * pattern.to(a)).sum(dim=(-1, -2)) / total for name, pattern in patterns.items()}
    rows = a.sum(-1) > 0  # (layers, heads, N): rows with any weight
    counted = rows.sum(-1).clamp_min(1)  # (layers, heads)
    scores["sink"] = a[..., 0].sum(-1) / counted
    position = torch.arange(n, device=a.device)
    near = ((position[:, None] - position[None, :]).abs() <= LOCAL_REACH).to(a)  # (N, N)
    scores["local"] = (a * near).sum(dim=(-1, -2)) / total
    plogp = torch.where(a > 0, a * a.clamp_min(1e-300).log(), torch.zeros_like(a))
    scores["entropy"] = -plogp.sum(-1).sum(-1) / counted
    return torch.stack([scores[name] for name in ROLE_NAMES], dim=-1).float()


def breadth(weights: torch.Tensor, real: torch.Tensor | None = None, rows: torch.Tensor | None = None
            ) -> torch.Tensor:
    """(layers, heads) each row's entropy over the most it could be (log of the keys it gave weight), 0…1, averaged.

    Softmax gives every key its mask allows some weight, so the keys with weight are the keys it could choose
    from; a row that had one key to choose counts as 0. A head that spreads evenly over what it may see scores
    1. This is the `broad` role: `entropy` alone grows with the sentence's length.
    """
    a = _kept(weights, real, rows)
    choices = (a > 0).sum(-1)  # (layers, heads, N): keys each row gave weight to
    plogp = torch.where(a > 0, a * a.clamp_min(1e-300).log(), torch.zeros_like(a))
    entropy = -plogp.sum(-1)  # (layers, heads, N)
    spread = choices > 1
    ratio = torch.where(spread, entropy / choices.clamp_min(2).double().log(), torch.zeros_like(entropy))
    rows = choices > 0
    return (ratio.sum(-1) / rows.sum(-1).clamp_min(1)).float()


def head_roles(weights: torch.Tensor, tokens: Sequence[Hashable],
               real: torch.Tensor | None = None, rows: torch.Tensor | None = None) -> tuple[HeadRoles, ...]:
    """Every head's role scores, layer-major, from weights (layers, heads, N, N) and the N token identities."""
    scores = role_scores(weights, tokens, real, rows).cpu()  # (layers, heads, roles)
    broad = breadth(weights, real, rows).cpu()  # (layers, heads)
    return tuple(HeadRoles(layer, head, dict(zip(ROLE_NAMES, map(float, scores[layer, head]), strict=True)),
                           float(broad[layer, head]))
                 for layer in range(scores.shape[0]) for head in range(scores.shape[1]))
