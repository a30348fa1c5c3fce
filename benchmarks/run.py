"""Speed and memory of attn-tui, printed as figures and ratios; asserts nothing. One command:

    python benchmarks/run.py            # everything (several minutes on 2 cores)
    python benchmarks/run.py --quick    # small sizes only

Ratios are what to compare across machines: the figures depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compute import multihead, scaled_dot
from generate import generate
from gpu import main as gpu
from keys import keys
from memory import memory
from open import open_models
from recorder import main as recorder
from smollm2 import smollm2
from startup import startup
from ui_thread import ui_thread
from write_key import write_key

SIZES = [16, 256, 1024, 4096, 16384]
QUICK = [16, 256, 1024]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--only", choices=("startup", "compute", "keys", "memory", "recorder", "smollm2", "open",
                                                "generate", "write_key", "ui_thread", "gpu"),
                        help="one section")
    args = parser.parse_args()
    sizes = QUICK if args.quick else SIZES
    sections = {
        "startup": lambda: startup(),
        "compute": lambda: (scaled_dot(sizes, 8), scaled_dot(sizes, 64), multihead([256, 1024], 64, 8)),
        "keys": lambda: keys(sizes),
        "memory": lambda: memory(sizes),
        "recorder": recorder,
        "smollm2": smollm2,
        "open": open_models,
        "generate": lambda: generate(16 if args.quick else 64),
        "write_key": lambda: write_key(4 if args.quick else 8),
        "ui_thread": ui_thread,
        "gpu": gpu,  # skipped where torch sees no GPU
    }
    for name, run in sections.items():
        if args.only in (None, name):
            run()


if __name__ == "__main__":
    main()
