"""Start-up: the first frame and the first heatmap against a bare `import torch`, each in a fresh process.

The app is started two ways: as the class (what the start-up work itself costs), and through the
`attn-tui` command as a person starts it (options parsed, the request's memory checked, the saved
session looked for, here in an empty state folder), drawn headless at 120×40 in both.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

TIMED = """
import sys, time
start = float(sys.argv[1])
import attn_tui.tui.app as app_module

class Timed(app_module.AttnApp):
    def on_mount(self):
        super().on_mount()
        self.call_after_refresh(lambda: print(f"frame {time.time() - start:.4f}", flush=True))

    def watch_shown(self, old, shown):
        super().watch_shown(old, shown)
        if shown is not None:
            self.call_after_refresh(lambda: (print(f"heatmap {time.time() - start:.4f}", flush=True), self.exit()))

    def run(self, **options):
        return super().run(headless=True, size=(120, 40))
"""
AS_CLASS = TIMED + "Timed().run()\n"
AS_COMMAND = TIMED + "app_module.AttnApp = Timed\nfrom attn_tui.cli import main\nmain([])\n"


def _run(args: list[str], env: dict[str, str] | None = None) -> str:
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, check=True, env=env).stdout


def _times(code: str, env: dict[str, str]) -> tuple[float, float]:
    out = dict(line.split() for line in _run(["-c", code, str(time.time())], env).splitlines() if line)
    return float(out["frame"]), float(out["heatmap"])


def startup(rounds: int = 7) -> None:
    """Median of `rounds`, the three ways taken in turn so that a change in the machine's load falls on each."""
    torch_runs: list[float] = []
    runs: dict[str, list[tuple[float, float]]] = {"the app class": [], "the attn-tui command": []}
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "ATTN_TUI_STATE_DIR": state, "ATTN_TUI_LANG": "en"}
        for _ in range(rounds):
            start = time.time()
            _run(["-c", "import torch"])
            torch_runs.append(time.time() - start)
            runs["the app class"].append(_times(AS_CLASS, env))
            runs["the attn-tui command"].append(_times(AS_COMMAND, env))
    torch_s = statistics.median(torch_runs)
    print(f"start-up (median of {rounds}, fresh processes, taken in turn): python -c 'import torch' "
          f"{torch_s * 1e3:.0f} ms")
    for way, times in runs.items():
        frame, heatmap = (statistics.median(t[i] for t in times) for i in (0, 1))
        print(f"  {way:<21} first frame {frame * 1e3:4.0f} ms ({frame / torch_s:.2f}× torch's import); first heatmap "
              f"{heatmap * 1e3:4.0f} ms ({heatmap / torch_s:.2f}×, {(heatmap - torch_s) * 1e3:+.0f} ms)")
