"""Plain dot-product attention: scores are raw q·k, with no scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.attention.attend import PreStage
from attn_tui.trace.ops import Dot

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    def pre(rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        return {"scores": (q[rows] @ k[cols].T)[None]}  # (1, rows, cols)

    stage = PreStage("scores", "S = Q·Kᵀ: S[i,j] = q_i·k_j", ctx.qk_axes, lambda at: Dot(at.at("query"), at.at("key")))
    ctx.record_geometry(1.0)  # raw q·k: nothing scales it but the temperature
    ctx.scores(pre, [stage], "scores")
