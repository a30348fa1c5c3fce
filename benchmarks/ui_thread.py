"""Torch calls made on the app's event-loop thread while a walk over its screens is driven key by key.

    python benchmarks/ui_thread.py

A key should cost what is visible and leave computing to the worker thread; this counts how far the app is from
running no torch operation on the event loop at all (a TorchFunctionMode sees only its own thread's calls, so the
worker's are not counted), and names where the calls come from. It asserts nothing.
"""

from __future__ import annotations

import asyncio
import collections
import sys
import traceback
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

SIZE = (120, 40)
WALKS = {  # sample → the keys pressed, each followed by waiting for the app to settle
    "korean": ["right", "right", "right", "right", "down", "shift+right", "g", "g", "p", "p", "end", "home", "s",
               "question_mark", "escape"],
    "multihead_korean": ["right"] * 6 + ["right_square_bracket", "left_square_bracket", "g", "g", "down", "a",
                                          "down", "escape"],
    "flash_tiles": ["right"] * 8 + ["down", "slash", "escape"],
    "lookup": ["7", "x", "down", "x", "8"],
}


def _seen() -> Any:
    from torch.overrides import TorchFunctionMode

    class Seen(TorchFunctionMode):
        """Counts each torch call on this thread, by the attn-tui line that made it."""

        def __init__(self) -> None:
            super().__init__()
            self.calls = 0
            self.where: collections.Counter[str] = collections.Counter()

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            self.calls += 1
            for frame in reversed(traceback.extract_stack(limit=30)[:-1]):
                if "/attn_tui/" in frame.filename:
                    self.where[f"{frame.filename.split('/attn_tui/')[1]}:{frame.lineno} {frame.name}"] += 1
                    break
            return func(*args, **(kwargs or {}))

    return Seen()


async def _walk(sample: str, keys: list[str]) -> Any:
    from tests.tui.helpers import sample_app, settle

    app = sample_app(sample)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = _seen()
        with seen:
            for key in keys:
                await pilot.press(key)
                await settle(pilot)
        return seen


def ui_thread() -> None:
    import os
    import tempfile

    os.environ.setdefault("ATTN_TUI_STATE_DIR", tempfile.mkdtemp(prefix="attn-tui-bench-"))
    print("\ntorch calls on the event-loop thread during a walk over the screens (0 is the aim)")
    where: collections.Counter[str] = collections.Counter()
    for sample, keys in WALKS.items():
        seen = asyncio.run(_walk(sample, keys))
        where += seen.where
        print(f"  {sample:18} {len(keys):3} keys  {seen.calls:6} calls")
    print("  where from, most first:")
    for line, count in where.most_common(12):
        print(f"    {count:6}  {line}")


if __name__ == "__main__":
    ui_thread()
