"""Plain dot-product attention: scores are raw q·k, with no scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.core.stage import Stage

if TYPE_CHECKING:
    from attn_tui.core.engine import Context



def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    scores = q @ k.T  # (L, S)
    ctx.trace.add(Stage("scores", scores, "S = Q·Kᵀ: S[i,j] = q_i·k_j", (ctx.query_axis, ctx.key_axis)))
    ctx.attend(scores, v, "S")
