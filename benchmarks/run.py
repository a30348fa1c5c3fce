"""Speed and memory of the engine and of start-up; prints figures and ratios, asserts nothing.

Run: python benchmarks/run.py [--quick]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _time(fn, repeat: int) -> float:
    """Median seconds of `repeat` calls after one warm-up call."""
    fn()
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def startup() -> None:
    """How long the CLI module takes to import compared with torch (the app paints in between)."""
    def cost(code: str) -> float:
        runs = []
        for _ in range(3):
            out = subprocess.run([sys.executable, "-c", f"import time; t=time.perf_counter(); {code}; "
                                  "print(time.perf_counter()-t)"], capture_output=True, text=True, check=True)
            runs.append(float(out.stdout))
        return statistics.median(runs)

    cli = cost("import attn_tui.cli")
    torch = cost("import torch")
    print(f"import attn_tui.cli {cli * 1000:7.1f} ms   import torch {torch * 1000:7.1f} ms   "
          f"ratio {torch / cli:5.1f}×")
    leaked = subprocess.run([sys.executable, "-c", "import sys, attn_tui.cli; print('torch' in sys.modules)"],
                            capture_output=True, text=True, check=True).stdout.strip()
    print(f"torch imported by attn_tui.cli: {leaked}")


def engine(sizes: list[int]) -> None:
    from attn_tui.core.engine import compute
    from attn_tui.core.settings import Request, SentenceInput, Settings

    variants = ["dot", "scaled_dot", "general", "additive", "concat", "multihead"]
    print(f"\ncompute() median ms per call (CPU, float32, dim 8)\n{'tokens':>7} " +
          " ".join(f"{v:>11}" for v in variants))
    base: dict[str, float] = {}
    for n in sizes:
        text = " ".join(f"w{i % 97}" for i in range(n))
        row = []
        for variant in variants:
            request = Request(SentenceInput(text), Settings(variant=variant, mask="causal", device="cpu"))
            seconds = _time(lambda request=request: compute(request), repeat=3 if n >= 1024 else 7)
            base.setdefault(variant, seconds)
            row.append(f"{seconds * 1000:8.2f}/{seconds / base[variant]:<3.0f}")
        print(f"{n:>7} " + " ".join(f"{c:>11}" for c in row))
    print("(ms/ratio to the smallest size)")
    n = sizes[-1]
    code = ("import resource, sys; from attn_tui.core.engine import compute;"
            "from attn_tui.core.settings import Request, SentenceInput, Settings;"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss;"
            f"compute(Request(SentenceInput(' '.join(['w'] * {n})), Settings(variant='additive', device='cpu')));"
            "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)")
    grown = float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout)
    print(f"peak RSS growth for additive at {n} tokens: {grown:.1f} MiB "
          f"(its energy tensor alone is {n * n * 8 * 4 / 2**20:.1f} MiB)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    args = parser.parse_args()
    startup()
    engine([16, 64, 256] if args.quick else [16, 64, 256, 1024, 2048])


if __name__ == "__main__":
    main()
