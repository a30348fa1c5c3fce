"""What recording costs: a learner's multi-head module run plain, run under attn_tui.record(), and the trace built.

    python benchmarks/recorder.py

Prints milliseconds and ratios to the plain run; asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attn_tui
from tests.sources.recorder.modules import MultiHeadAttention

SIZES = (16, 128, 512)


def median_ms(fn, repeat: int = 5) -> float:
    fn()
    runs = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return 1000 * statistics.median(runs)


def main() -> None:
    torch.manual_seed(0)
    module = MultiHeadAttention(64, 8).eval()
    print(f"{'tokens':>7} {'plain ms':>9} {'recorded ms':>12} {'ratio':>6} {'build ms':>9} {'ratio':>6}")
    for n in SIZES:
        x = torch.randn(1, n, 64)
        mask = torch.tril(torch.ones(n, n))

        def plain(x: torch.Tensor = x, mask: torch.Tensor = mask) -> None:
            with torch.no_grad():
                module(x, mask)

        def recorded(x: torch.Tensor = x, mask: torch.Tensor = mask):
            with torch.no_grad(), attn_tui.record() as rec:
                module(x, mask)
            return rec

        def built(recorded=recorded) -> None:
            _ = recorded().trace

        base, rec_ms, total = median_ms(plain), median_ms(recorded), median_ms(built)
        build = total - rec_ms
        print(f"{n:>7} {base:>9.2f} {rec_ms:>12.2f} {rec_ms / base:>6.1f} {build:>9.1f} {build / base:>6.0f}")


if __name__ == "__main__":
    main()
