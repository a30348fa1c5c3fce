"""Peak resident memory of the CLI and of the app per input length, each in a fresh process."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

APP = """
import asyncio, sys
from attn_tui.ask.settings import VariantAsk, SentenceInput, Settings
from attn_tui.tui.app import AttnApp

async def main():
    text = " ".join(f"w{i % 97}" for i in range(int(sys.argv[1])))
    app = AttnApp(VariantAsk(SentenceInput(text), Settings(mask="causal")))
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(2000):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if app.torch_ready and app.generation and app.shown_generation == app.generation:
                break
        for key in ("right", "down", "left"):
            await pilot.press(key)
            await pilot.pause()
    print(next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM')) // 1024)

asyncio.run(main())
"""


def _cli_peak(n: int) -> int:
    """Peak RSS (MiB) of `attn-tui stages --format json --stage weights` on n tokens, output discarded."""
    text = " ".join(f"w{i % 97}" for i in range(n))
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as words:
        words.write(text)
    code = ("import sys; from attn_tui.cli import main; sys.stdout = open(sys.argv[2], 'w'); "
            "main(['stages', '--text', open(sys.argv[1]).read(), '--stage', 'weights', '--format', 'json']); "
            "print(next(int(line.split()[1]) for line in open('/proc/self/status') if line.startswith('VmHWM'))"
            " // 1024, file=sys.stderr)")
    try:
        result = subprocess.run([sys.executable, "-c", code, words.name, os.devnull], capture_output=True, text=True,
                                check=True)
    finally:
        os.unlink(words.name)
    return int(result.stderr.strip().splitlines()[-1])


def memory(sizes: list[int]) -> None:
    print("\npeak resident memory, MiB (fresh process each): the CLI printing one stage as JSON, and the app; "
          "one dense float32 N×N stage for scale")
    print(f"{'tokens':>7} {'CLI':>7} {'app':>7} {'one N×N stage':>14}")
    for n in sizes:
        app = int(subprocess.run([sys.executable, "-c", APP, str(n)], capture_output=True, text=True,
                                 check=True).stdout.strip().splitlines()[-1])
        print(f"{n:>7} {_cli_peak(n):>7} {app:>7} {n * n * 4 / 2**20:>14.0f}")
