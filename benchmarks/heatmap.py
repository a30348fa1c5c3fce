"""Heatmap cost against matrix size: one-time preparation per stage and per visible frame.

A frame draws what a 100×32 terminal shows (about 28 lines × 70 cells); its cost should
stay flat as N grows, while preparation (colour range, marks) grows with N².
Run: python benchmarks/heatmap.py
"""

from __future__ import annotations

import statistics
import time

import torch

from attn_tui.present.grid import Grid
from attn_tui.render.heatmap import dense_segment, grid_scale, layout_for

LINES, CELLS = 28, 70


def _median_ms(fn, repeat: int = 5) -> float:
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return statistics.median(runs) * 1000


def main() -> None:
    print(f"{'N':>6} {'prepare ms':>11} {'frame ms':>9}   (frame = {LINES} lines × {CELLS} cells, dense mode)")
    base = None
    for n in (70, 256, 1024, 2048):
        weights = torch.softmax(torch.randn(n, n), dim=-1)  # (N, N)
        labels = tuple(f"t{i}" for i in range(n))
        holder: dict[str, object] = {}

        def prepare(weights=weights, labels=labels, holder=holder) -> None:
            grid = Grid(weights.double().numpy(), labels, labels, "query", "key", probability=True)
            holder["grid"], holder["scale"] = grid, grid_scale(grid)
            holder["layout"] = layout_for(grid, 80)

        def frame(holder=holder, n=n) -> None:
            grid, scale = holder["grid"], holder["scale"]
            for line in range(min(LINES, (n + 1) // 2)):
                [dense_segment(grid, scale, line, j, None) for j in range(min(CELLS, n))]

        prep = _median_ms(prepare, 3)
        per_frame = _median_ms(frame, 9)
        base = base or per_frame
        print(f"{n:>6} {prep:>11.1f} {per_frame:>9.2f}   frame ratio to N=70: {per_frame / base:.2f}")


if __name__ == "__main__":
    main()
