"""The inbox between a visitor's websocket and its app: a flood is bounded, sizes and focus keep only the latest."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("textual_serve", reason="textual-serve is not installed: pip install 'attn-tui[web]'")

from attn_tui.cli.serve_inbox import MAX_PENDING, Inbox
from tests.limits import limit


class SlowApp:
    """An app that takes its input only when the test lets it."""

    def __init__(self) -> None:
        self.got: list[object] = []
        self.open = asyncio.Event()

    async def send_bytes(self, data: bytes) -> bool:
        await self.open.wait()
        self.got.append(data)
        return True

    async def set_terminal_size(self, width: int, height: int) -> None:
        await self.open.wait()
        self.got.append((width, height))

    async def blur(self) -> None:
        self.got.append("blur")

    async def focus(self) -> None:
        self.got.append("focus")


def test_a_flood_waits_in_bounded_memory_and_keeps_the_keys_order() -> None:
    async def main() -> tuple[list[object], int]:
        app, inbox = SlowApp(), Inbox()
        feeder = asyncio.create_task(inbox.feed(app))
        inbox.key(b"first")
        await asyncio.sleep(0)
        await asyncio.sleep(0)  # the feeder now waits on the app with b"first"
        for n in range(100_000):
            inbox.key(f"{n:07d}".encode())
            inbox.resize(10 + n % 7, 4 + n % 5)
            inbox.focus(n % 2 == 0)
        most = inbox.pending
        app.open.set()
        for _ in range(20):
            await asyncio.sleep(0)
        feeder.cancel()
        return app.got, most

    got, most = asyncio.run(main())
    assert most <= MAX_PENDING
    keys = b"".join(item for item in got if isinstance(item, bytes))
    kept = MAX_PENDING // 7
    assert keys == b"first" + b"".join(f"{n:07d}".encode() for n in range(kept))  # the oldest, in order
    assert [item for item in got if isinstance(item, tuple)] == [(10 + 99_999 % 7, 4 + 99_999 % 5)]
    assert [item for item in got if isinstance(item, str)] == ["blur"]  # the last change: n = 99 999 is odd


def test_a_feeder_cancelled_mid_write_ends_at_once() -> None:
    async def main() -> bool:
        app, inbox = SlowApp(), Inbox()  # never opened: the pipe to the app stays full
        feeder = asyncio.create_task(inbox.feed(app))
        inbox.key(b"x")
        await asyncio.sleep(0.01)
        feeder.cancel()
        await asyncio.wait([feeder], timeout=limit(1))
        return feeder.cancelled()

    assert asyncio.run(main())
