"""A generation's steps put back together: the rows written so far as one (N, N) matrix per layer and head.

Step 0 holds the prompt's P rows over its P keys, step t ≥ 1 the one row of the token fed at position
P + t − 1 over the P + t keys; laid one under the other they are the causal matrix one full forward over the
same tokens gives (the tests check it), which is what the heatmap, the grid and the rollout read.
"""

from __future__ import annotations

import torch

from attn_tui.trace.stage import Trace


def grows(trace: Trace) -> bool:
    """A trace whose steps are tokens a model wrote."""
    return trace.step_axis is not None and trace.step_axis.kind == "token"


def written_rows(trace: Trace, name: str, layer: int, head: int, steps: int | None = None) -> torch.Tensor:
    """(N, N) the stage `name` of (layer, head) over the first `steps` steps (all by default), 0 where a row
    does not reach (a later key)."""
    count = trace.steps() if steps is None else steps
    parts = [trace.tensor(name, layer, head, t) for t in range(count)]  # (rows_t, keys_t) each
    n = sum(part.shape[0] for part in parts)
    out = torch.zeros(n, n, dtype=parts[0].dtype, device=parts[0].device)
    row = 0
    for part in parts:
        out[row:row + part.shape[0], :part.shape[1]] = part
        row += part.shape[0]
    return out
