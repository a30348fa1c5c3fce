"""An independent float64 reading of the head-role formulas, written as plain loops over Python lists.

TransformerLens's `detect_head` (default options): score = Σ(A ⊙ P) / ΣA; sink the mean weight on key 0;
local the share within ±2 positions; entropy the mean row entropy. `first` scores only query rows ≥ first.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


def loop_scores(a: Sequence[Sequence[float]], ids: Sequence[int], first: int = 0) -> dict[str, float]:
    n = len(ids)
    rows = range(first, n)
    total = sum(a[i][j] for i in rows for j in range(n))

    def share(pattern) -> float:  # type: ignore[no-untyped-def]
        return sum(a[i][j] for i in rows for j in range(n) if pattern(i, j)) / total

    return {
        "previous_token": share(lambda i, j: j == i - 1),
        "duplicate_token": share(lambda i, j: j < i and ids[j] == ids[i]),
        "induction": share(lambda i, j: j >= 1 and j - 1 < i and ids[j - 1] == ids[i]),
        "sink": sum(a[i][0] for i in rows) / len(rows),
        "local": share(lambda i, j: abs(i - j) <= 2),
        "entropy": sum(-sum(x * math.log(x) for x in a[i] if x > 0) for i in rows) / len(rows),
    }
