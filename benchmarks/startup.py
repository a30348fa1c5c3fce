"""Start-up: the first frame and the first heatmap against a bare `import torch`, each in a fresh process."""

from __future__ import annotations

import statistics
import subprocess
import sys
import time

FIRST = """
import sys, time
start = float(sys.argv[1])
from attn_tui.tui.app import AttnApp

class Timed(AttnApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(lambda: print(f"frame {time.time() - start:.4f}", flush=True))

    def watch_shown(self, old, shown):
        super().watch_shown(old, shown)
        if shown is not None:
            self.call_after_refresh(lambda: (print(f"heatmap {time.time() - start:.4f}", flush=True), self.exit()))

Timed().run(headless=True, size=(120, 40))
"""


def _run(args: list[str]) -> str:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True).stdout


def startup(rounds: int = 3) -> None:
    torch_runs, frames, heatmaps = [], [], []
    for _ in range(rounds):
        start = time.time()
        _run(["-c", "import torch"])
        torch_runs.append(time.time() - start)
        out = dict(line.split() for line in _run(["-c", FIRST, str(time.time())]).splitlines() if line)
        frames.append(float(out["frame"]))
        heatmaps.append(float(out["heatmap"]))
    torch_s, frame, heatmap = (statistics.median(x) for x in (torch_runs, frames, heatmaps))
    print(f"start-up (median of {rounds}, fresh processes): python -c 'import torch' {torch_s * 1e3:.0f} ms; "
          f"first frame {frame * 1e3:.0f} ms ({frame / torch_s:.2f}× torch's import); first heatmap "
          f"{heatmap * 1e3:.0f} ms ({heatmap / torch_s:.2f}× torch's import, + {(heatmap - torch_s) * 1e3:.0f} ms)")
