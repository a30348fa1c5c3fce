"""What a whole model's run produced beside its stages: every head's statistics and the attention rollout.

Records only: `attention.summary` computes them from a trace's weights (in the worker), and the views
(`trace.shown.Shown`, present's model view) read them without importing the attention math.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ROLLOUT_FORMULA = "R = Π_l (½·mean_h A_l + ½·I), rows renormalised  (attention rollout, Abnar & Zuidema 2020)"
ROLLOUT_MOVED_FORMULA = ("the same rollout with each head's A replaced by Ã[i,j] = M[i,j] / Σ_k M[i,k], "
                         "M[i,j] = ‖A[i,j] · v_j·W_O,hᵀ‖  (value-weighted: Kobayashi et al. 2020's norms)")


@dataclass(frozen=True)
class HeadStats:
    """What one head does at a glance: how spread, how peaked, how much goes to token 0."""

    layer: int
    head: int
    entropy: float  # mean over real query rows, in nats
    max_weight: float
    first_token_share: float  # mean weight on key 0 ([CLS] or the first word)


ROLE_NAMES = ("previous_token", "duplicate_token", "induction", "sink", "local", "entropy")


@dataclass(frozen=True)
class HeadRoles:
    """One head's score on each role (`ROLE_NAMES`, attention/head_roles.py says how each is computed).

    Every score but `entropy` (nats) is a share of the head's attention, 0…1; `breadth` is its entropy over
    the most it could be, 0…1 (the `broad` role).
    """

    layer: int
    head: int
    scores: dict[str, float]
    breadth: float
    moved: float | None = None  # mean over query rows of Σ_j ‖A[i,j] · v_j·W_O,hᵀ‖ (the `moved` stage); None without


@dataclass(frozen=True)
class ModelStats:
    """A whole model over one input, computed once in the worker: what the grid, rollout and CLI summary read."""

    weights: torch.Tensor  # (layers, heads, N, N) float32 on the CPU: every head's weights
    stats: tuple[HeadStats, ...]  # layer-major
    rollout: torch.Tensor  # (N, N)
    blocked: torch.Tensor | None  # (layers, N, N) bool: cells each layer's own mask hides; None: nothing masked
    roles: tuple[HeadRoles, ...] = ()  # layer-major; () where the rows are not the keys (a generation's steps)
    rollout_moved: torch.Tensor | None = None  # (N, N) the value-weighted rollout; None without `moved` stages
