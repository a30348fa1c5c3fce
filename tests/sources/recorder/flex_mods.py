"""The score_mods and mask_mods the flex tests record, each beside its dense float64 reference written from the formula.

A case is (score_mod, mask_mod, reference bias, reference mask): the reference takes the (B, H, L, S)
float64 scaled scores and gives the scores after the mod; the mask gives True where a query may attend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

B, H, L, D = 2, 3, 50, 8
CAP = 2.0
WINDOW = 7
PREFIX = 12
SLOPES = torch.tensor([0.5, 0.25, 0.125])  # ALiBi: one slope per head, 2^(-8h/H) style
REL_TABLE = torch.linspace(-1.0, 1.0, 2 * L - 1)  # a learned relative bias, one number per distance q - kv
DOCS = torch.tensor([0] * 17 + [1] * 20 + [2] * 13)  # document of each position (packed sequences)

q_at = torch.arange(L)[:, None]
kv_at = torch.arange(L)[None, :]


def soft_cap(score, b, h, q_idx, kv_idx):
    return CAP * torch.tanh(score / CAP)


def alibi(score, b, h, q_idx, kv_idx):
    return score - SLOPES[h] * (q_idx - kv_idx).abs()


def relative_bias(score, b, h, q_idx, kv_idx):
    return score + REL_TABLE[q_idx - kv_idx + L - 1]


def causal(b, h, q_idx, kv_idx):
    return q_idx >= kv_idx


def sliding_window(b, h, q_idx, kv_idx):
    return (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW)


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx < PREFIX) | (q_idx >= kv_idx)


def document(b, h, q_idx, kv_idx):
    return DOCS[q_idx] == DOCS[kv_idx]


@dataclass(frozen=True)
class Case:
    name: str
    score_mod: Callable | None
    mask_mod: Callable | None
    modded: Callable[[torch.Tensor], torch.Tensor]  # (B, H, L, S) float64 scaled scores → after the score_mod
    allowed: torch.Tensor  # (L, S) True = may attend


CASES = (
    Case("soft_cap", soft_cap, None, lambda s: CAP * torch.tanh(s / CAP), torch.ones(L, L, dtype=torch.bool)),
    Case("alibi", alibi, None, lambda s: s - SLOPES.double()[None, :, None, None] * (q_at - kv_at).abs().double(),
         torch.ones(L, L, dtype=torch.bool)),
    Case("relative_bias", relative_bias, None, lambda s: s + REL_TABLE.double()[q_at - kv_at + L - 1],
         torch.ones(L, L, dtype=torch.bool)),
    Case("causal", None, causal, lambda s: s, kv_at <= q_at),
    Case("sliding_window", None, sliding_window, lambda s: s, (kv_at <= q_at) & (q_at - kv_at < WINDOW)),
    Case("prefix_lm", None, prefix_lm, lambda s: s, (kv_at < PREFIX) | (kv_at <= q_at)),
    Case("document", None, document, lambda s: s, DOCS[:, None] == DOCS[None, :]),
)


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, case: Case, scale: float
              ) -> dict[str, torch.Tensor]:
    """softmax(mask(mod(Q·Kᵀ·scale)))·V in float64, by the formula, every (b, h) at once."""
    scaled = (q.double() @ k.double().transpose(-2, -1)) * scale  # (B, H, L, S)
    modded = case.modded(scaled)
    masked = modded.masked_fill(~case.allowed, -torch.inf)
    weights = torch.softmax(masked, dim=-1)
    return {"scaled": scaled, "modded": modded, "masked": masked, "weights": weights, "output": weights @ v.double()}
