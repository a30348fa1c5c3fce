"""Plain dot-product attention: scores are raw q·k, with no scaling."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from attn_tui.core.ops import Dot, Place
from attn_tui.core.stage import Stage

if TYPE_CHECKING:
    from attn_tui.core.engine import Context


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    ctx.trace.add(Stage(Place("scores"), q @ k.T, "S = Q·Kᵀ: S[i,j] = q_i·k_j", (ctx.query_axis, ctx.key_axis),
                        Dot(Place("query"), Place("key"))))  # (L, S)
    ctx.attend(Place("scores"), Place("value"))
