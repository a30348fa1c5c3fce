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
from pathlib import Path

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


async def _walk(sample: str, keys: list[str]) -> collections.Counter[str]:
    from tests.tui.helpers import sample_app, torch_calls_on_the_loop

    async with sample_app(sample).run_test(size=SIZE) as pilot:
        return await torch_calls_on_the_loop(pilot, keys)


def ui_thread() -> None:
    import os
    import tempfile

    os.environ.setdefault("ATTN_TUI_STATE_DIR", tempfile.mkdtemp(prefix="attn-tui-bench-"))
    print("\ntorch calls on the event-loop thread during a walk over the screens (0 is the aim)")
    where: collections.Counter[str] = collections.Counter()
    for sample, keys in WALKS.items():
        seen = asyncio.run(_walk(sample, keys))
        where += seen
        print(f"  {sample:18} {len(keys):3} keys  {sum(seen.values()):6} calls")
    print("  where from, most first:")
    for line, count in where.most_common(12):
        print(f"    {count:6}  {line}")


if __name__ == "__main__":
    ui_thread()
