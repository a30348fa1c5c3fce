"""What a keypress costs in the app, driven through Pilot at growing lengths: key → last repaint, and handler time.

Key → last repaint runs from the key's press to the last time the screen handed the terminal an update
(`App._display`, which Textual calls after the compositor has rendered the changed lines). It is read from
those calls, not from when Pilot's `pause()` returns: Pilot waits there for the process to look idle, which
costs a hundred milliseconds or more at any length and would hide what the key itself costs.
"""

from __future__ import annotations

import asyncio
import functools
import statistics
import time
from collections.abc import Callable
from typing import Any

from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
from attn_tui.tui.app import AttnApp

SIZE = (120, 40)
KEYS = {"stage": ["right", "left"], "cursor": ["down", "up"], "head": ["right_square_bracket"], "params": ["p"]}
HANDLERS = {"stage": ("action_next_stage", "action_prev_stage"), "cursor": (),  # the heatmap's own (below)
            "head": ("action_next_head",), "params": ("action_toggle_params",)}


class _TimedApp(AttnApp):
    """The app with its key handlers timed (what the UI thread spends on a keypress before repainting)."""

    handler_seconds: list[float]
    painted_at: float

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.handler_seconds = []
        self.painted_at = 0.0
        for names in HANDLERS.values():
            for name in names:
                setattr(self, name, self._timed(getattr(self, name)))

    def _timed(self, handler: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(handler)  # Textual passes an action as many parameters as the handler's signature has
        def run(*args: Any) -> None:
            start = time.perf_counter()
            handler(*args)
            self.handler_seconds.append(time.perf_counter() - start)
        return run

    def _display(self, screen: Any, renderable: Any) -> None:
        if renderable is not None:
            self.painted_at = time.perf_counter()
        super()._display(screen, renderable)


async def _settle(pilot: Any) -> None:
    app = pilot.app
    for _ in range(2000):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.torch_ready and app.state.generation > 0 and app.state.shown_generation == app.state.generation:
            return
    raise RuntimeError("the app never settled")


async def _measure(n: int, kind: str, rounds: int) -> tuple[float, float]:
    """Median key → last repaint and median handler time (seconds) for one kind of key at n tokens."""
    variant = "multihead" if kind == "head" else "scaled_dot"
    text = " ".join(f"w{i % 97}" for i in range(n))
    app = _TimedApp(VariantAsk(SentenceInput(text), Settings(variant=variant, mask="causal", heads=4)))
    walls: list[float] = []
    async with app.run_test(size=SIZE) as pilot:
        await _settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.pause()
        heatmap = app.explorer.heatmap  # the cursor keys are the focused heatmap's own bindings
        heatmap.action_cursor = app._timed(heatmap.action_cursor)  # type: ignore[method-assign]
        app.handler_seconds.clear()
        for r in range(rounds):
            for key in KEYS[kind]:
                start = time.perf_counter()
                await pilot.press(key)
                await pilot.pause()
                walls.append(app.painted_at - start)
            if kind == "params" and r % 2 == 0:
                await pilot.press("p")  # back to the heatmap, untimed
                await pilot.pause()
    return statistics.median(walls), statistics.median(app.handler_seconds)


def keys(sizes: list[int], rounds: int = 5) -> None:
    print("\nkeypresses in the app (Pilot, 120×40): median key → last repaint ms / handler ms, and the ratio to the "
          f"first size ({sizes[0]} tokens)")
    base: dict[str, tuple[float, float]] = {}
    print(f"{'tokens':>7} " + " ".join(f"{kind:>26}" for kind in KEYS))
    for n in sizes:
        row = []
        for kind in KEYS:
            wall, handler = asyncio.run(_measure(n, kind, rounds))
            base.setdefault(kind, (wall, handler))
            ratios = f"{wall / base[kind][0]:.2f}×/{handler / base[kind][1]:.2f}×"
            row.append(f"{wall * 1e3:6.1f}/{handler * 1e3:5.1f} ({ratios})")
        print(f"{n:>7} " + " ".join(f"{cell:>26}" for cell in row))
