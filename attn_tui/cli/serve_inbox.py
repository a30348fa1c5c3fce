"""What a visitor's browser has sent and its app has not yet taken: bounded, so a flood costs nothing lasting.

serve once wrote each message into the app's stdin as it arrived, waiting whenever the pipe was
full; a page sending keys and sizes faster than its app could take them kept serve waiting on
that pipe, never reading the websocket, and so never seeing the visitor leave: the app lived on,
holding a visitor's slot, for as long as its backlog lasted. Here serve only files messages,
and one task per visitor writes them: keys up to MAX_PENDING bytes (beyond, typed keys are
dropped, as a terminal drops what overflows its buffer), and of sizes and focus only the latest.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

MAX_PENDING = 64 * 1024  # bytes of keys waiting for a busy app


class App(Protocol):
    async def send_bytes(self, data: bytes) -> bool: ...
    async def set_terminal_size(self, width: int, height: int) -> None: ...
    async def blur(self) -> None: ...
    async def focus(self) -> None: ...


class Inbox:
    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.pending = 0  # bytes in self.keys
        self.size: tuple[int, int] | None = None  # the latest size asked for, not yet sent
        self.focused: bool | None = None  # the latest focus change, not yet sent
        self.waiting = asyncio.Event()

    def key(self, data: bytes) -> None:
        if self.pending + len(data) > MAX_PENDING:
            return
        self.keys.append(data)
        self.pending += len(data)
        self.waiting.set()

    def resize(self, width: int, height: int) -> None:
        self.size = (width, height)
        self.waiting.set()

    def focus(self, focused: bool) -> None:
        self.focused = focused
        self.waiting.set()

    async def feed(self, app: App) -> None:
        """Write what came in to the app, oldest keys first, until cancelled (the visitor has gone)."""
        while True:
            await self.waiting.wait()
            self.waiting.clear()
            size, self.size = self.size, None
            focused, self.focused = self.focused, None
            keys, self.keys, self.pending = b"".join(self.keys), [], 0
            if size is not None:
                await app.set_terminal_size(*size)
            if focused is not None:
                await (app.focus() if focused else app.blur())
            if keys:
                await app.send_bytes(keys)
