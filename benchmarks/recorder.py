"""What recording costs: code run plain, run under attn_tui.record(), and the trace built, as ratios to the plain run.

    python benchmarks/recorder.py            # the three tables
    python benchmarks/recorder.py --threads 1
    python benchmarks/recorder.py --keep-memory   # no page faults: the recorder's own work alone

1. A learner's multi-head module (8 heads, its own softmax) at 16, 128 and 512 tokens.
2. torch's nn.MultiheadAttention (8 heads, 512 wide) at 128 and 512 tokens.
3. A 12-layer Hugging Face model (random Llama weights, 8 heads) as it runs by default (sdpa),
   at 128 and 512 tokens: what recording adds to its forward, and what building its trace costs.

Times are CPU seconds of this process (`time.process_time`), the median of several runs, so that
other work on the machine does not skew the ratios; torch runs on `--threads` threads (default 1).
Each timed call runs once untimed first (the first recording and the first build import their modules
and read the loaded modules once), and plain and recorded runs are timed in turns. A recording keeps
the values each attention call reads, back to its projections' inputs (a 12-layer forward
at 128 tokens: some 8 MB), and memory that went back to the system in between is mapped afresh, page
by page: `faults` is the median count of a recorded run's page faults (about 10,000 at 128 tokens cost
some 20 ms; whether they come is up to the C library's allocator, and is most of what still makes the
recorded figures swing from run to run: 0 or some 10,000 from one run of this script to the next;
`--keep-memory` asks glibc to keep what it mapped, leaving the recorder's own work alone, and
`GLIBC_TUNABLES=glibc.malloc.hugetlb=1` maps it 2 MB at a time where the kernel allows).
The garbage collector is kept out of the figures: each run starts after a full collection, untimed,
and each recording is dropped after its clock stops, so a collection of the whole heap does not land
in a timed run; without this a 128-token figure swung by ±20 ms.
Prints milliseconds and ratios; asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import attn_tui
from tests.sources.recorder.modules import MultiHeadAttention

SIZES = (16, 128, 512)
MODEL_SIZES = (128, 512)


FAULTS: list[int] = []  # page faults of each timed recorded run (memory mapped afresh), for the table


def _faults() -> int:
    try:
        import resource
    except ImportError:  # not on Windows: the column reads 0
        return 0
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_minflt)


def _timed(fn: Callable[[], Any], faults: list[int] | None = None) -> float:
    gc.collect()  # the last run's garbage goes, and the next full collection is as far off as it can be
    mapped = _faults()
    start = time.process_time()
    kept = fn()
    spent = time.process_time() - start
    if faults is not None:
        faults.append(_faults() - mapped)
    del kept  # a recording is dropped after the clock stops
    return spent


def paired_ms(plain: Callable[[], Any], recorded: Callable[[], Any], repeat: int = 7) -> tuple[float, float]:
    """Median times of the plain and the recorded run, taken in turns (each once untimed first), so that both
    meet the same machine and the same heap. The recorded runs' page faults are left in FAULTS."""
    plain()
    recorded()
    times: tuple[list[float], list[float]] = ([], [])
    FAULTS.clear()
    for _ in range(repeat):
        times[0].append(_timed(plain))
        times[1].append(_timed(recorded, FAULTS))
    return 1000 * statistics.median(times[0]), 1000 * statistics.median(times[1])


def build_ms(record: Callable[[], Any], repeat: int = 5) -> float:
    """The median time of `rec.trace` alone, each on a fresh recording (one untimed build first)."""
    _ = record().trace
    runs = []
    for _ in range(repeat):
        rec = record()
        gc.collect()
        start = time.process_time()
        _ = rec.trace
        runs.append(time.process_time() - start)
        del rec
    return 1000 * statistics.median(runs)


def row(label: object, base: float, recorded: float, build: float) -> None:
    faults = int(statistics.median(FAULTS)) if FAULTS else 0
    print(f"{label!s:>7} {base:>9.1f} {recorded:>12.1f} {recorded / base:>6.2f} {faults:>7} {build:>9.1f} "
          f"{build / base:>6.2f}")


def header(title: str) -> None:
    print(title)
    print(f"{'tokens':>7} {'plain ms':>9} {'recorded ms':>12} {'ratio':>6} {'faults':>7} {'build ms':>9} {'ratio':>6}")


def learner() -> None:
    torch.manual_seed(0)
    module = MultiHeadAttention(64, 8).eval()
    header("a learner's multi-head module, 8 heads (its own softmax)")
    for n in SIZES:
        x = torch.randn(1, n, 64)
        mask = torch.tril(torch.ones(n, n))

        def plain(x: torch.Tensor = x, mask: torch.Tensor = mask) -> None:
            with torch.no_grad():
                module(x, mask)

        def recorded(x: torch.Tensor = x, mask: torch.Tensor = mask) -> Any:
            with torch.no_grad(), attn_tui.record() as rec:
                module(x, mask)
            return rec

        row(n, *paired_ms(plain, recorded), build_ms(recorded))


def multihead() -> None:
    """torch's own nn.MultiheadAttention (its projections and SDPA fused in one call), 8 heads, 512 wide."""
    torch.manual_seed(0)
    module = torch.nn.MultiheadAttention(512, 8, batch_first=True).eval()
    header("nn.MultiheadAttention, 8 heads, 512 wide (one fused call)")
    for n in (128, 512):
        x = torch.randn(1, n, 512)

        def plain(x: torch.Tensor = x) -> None:
            with torch.no_grad():
                module(x, x, x, need_weights=False)

        def recorded(x: torch.Tensor = x) -> Any:
            with torch.no_grad(), attn_tui.record() as rec:
                module(x, x, x, need_weights=False)
            return rec

        row(n, *paired_ms(plain, recorded), build_ms(recorded))


def twelve_layers() -> None:
    try:
        import transformers
    except ImportError:
        print("transformers is not installed: the 12-layer model is skipped")
        return
    config = transformers.LlamaConfig(vocab_size=1000, hidden_size=256, intermediate_size=512, num_hidden_layers=12,
                                      num_attention_heads=8, num_key_value_heads=8, max_position_embeddings=1024)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    header(f"a 12-layer Llama, 8 heads, as it runs by default ({model.config._attn_implementation})")
    for n in MODEL_SIZES:
        ids = torch.randint(0, 1000, (1, n))

        def plain(ids: torch.Tensor = ids) -> None:
            with torch.no_grad():
                model(ids)

        def recorded(ids: torch.Tensor = ids) -> Any:
            with torch.no_grad(), attn_tui.record() as rec:
                model(ids)
            return rec

        row(n, *paired_ms(plain, recorded), build_ms(recorded, 3))


def keep_memory() -> bool:
    """Ask glibc's allocator to keep what it mapped (no trimming, no mmap per large block), so that a recording
    reuses the last one's memory instead of faulting it in again: the figures then show the recorder's own
    work. False where that cannot be asked (not glibc)."""
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        trim, mmap = -1, -3  # M_TRIM_THRESHOLD, M_MMAP_THRESHOLD (malloc.h)
        return bool(libc.mallopt(trim, 1 << 30)) and bool(libc.mallopt(mmap, 32 << 20))
    except (OSError, AttributeError):
        return False


def main(threads: int = 1, keep: bool = False) -> None:
    """The three tables (`benchmarks/run.py --only recorder` calls this too)."""
    torch.set_num_threads(threads)
    if keep and not keep_memory():
        print("--keep-memory: this C library's allocator cannot be asked; figures as without it")
    learner()
    print()
    multihead()
    print()
    twelve_layers()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1)")
    parser.add_argument("--keep-memory", action="store_true",
                        help="glibc keeps the memory it mapped: no page faults, the recorder's own work alone")
    args = parser.parse_args()
    main(args.threads, args.keep_memory)
