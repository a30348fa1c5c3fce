"""One visitor's app under `attn-tui serve`: its own process, session folder and terminal size, and its end.

textual-serve's AppService runs the app through a shell and, once the browser has gone,
stops reading what the app writes and only asks it to quit; an app blocked on that full
pipe never hears the request and loops on. Here the app is run directly, in a
process group of its own; the visitor's end asks it to quit, then SIGTERMs it, then
SIGKILLs the group, and the process is waited for in every case.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from textual_serve.app_service import AppService

from attn_tui.tui.served import EXPORT_ENV, PARENT_ENV, SERVED_ENV

log = logging.getLogger("textual-serve")

MAX_COLUMNS, MAX_ROWS = 400, 200  # a terminal larger than any screen: each cell costs the app memory
MIN_COLUMNS, MIN_ROWS = 10, 4
QUIT_GRACE, TERM_GRACE = 1.0, 3.0  # seconds an app has to end after `quit` (its session is thrown away), then SIGTERM
live_groups: set[int] = set()  # process groups of apps not yet waited for: killed at exit whatever happens


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A terminal size the visitor asked for, brought into MIN..MAX (anything not a number: 80×24)."""
    def number(value: object, default: int) -> int:
        try:
            return int(str(value))
        except (TypeError, ValueError, OverflowError):
            return default

    return (min(max(number(width, 80), MIN_COLUMNS), MAX_COLUMNS),
            min(max(number(height, 24), MIN_ROWS), MAX_ROWS))


def kill_left_groups() -> None:
    """At serve's exit: SIGKILL every app group still running (a crash between start and wait)."""
    for group in list(live_groups):
        with contextlib.suppress(OSError):
            os.killpg(group, signal.SIGKILL)
        live_groups.discard(group)


class VisitorApp(AppService):
    """The app of one websocket: `python -m attn_tui` in a viewer's clothes (see attn_tui.tui.served)."""

    def __init__(self, *, folder: Path, export_dir: Path, **options: Any) -> None:
        super().__init__(f"{sys.executable} -m attn_tui", **options)
        self.folder, self.export_dir = folder, export_dir
        self.last_input = asyncio.get_running_loop().time()
        self._ending: asyncio.Task[None] | None = None

    def touch(self) -> None:
        self.last_input = asyncio.get_running_loop().time()

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width, height)
        environment.update({SERVED_ENV: "1", EXPORT_ENV: str(self.export_dir), PARENT_ENV: str(os.getpid()),
                            "ATTN_TUI_STATE_DIR": str(self.folder)})
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> asyncio.subprocess.Process:
        self._process = process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "attn_tui", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=None if self.debug else asyncio.subprocess.DEVNULL,  # raw bytes never reach serve's terminal
            env=self._build_environment(width, height), start_new_session=True)
        live_groups.add(process.pid)
        self._stdin = process.stdin
        return process

    @property
    def process(self) -> asyncio.subprocess.Process | None:
        return self._process

    async def send_meta(self, data: dict[str, str | int | bool | None]) -> bool:
        if self._stdin is None or self._stdin.is_closing():
            return False
        return await super().send_meta(data)

    async def send_bytes(self, data: bytes) -> bool:
        if self._stdin is None or self._stdin.is_closing():
            return False
        return await super().send_bytes(data)

    async def run(self) -> None:
        """Pass the app's packets to the browser until either side ends; then the app ends too."""
        assert self._process is not None and self._process.stdout is not None
        stdout = self._process.stdout
        try:
            for _ in range(10):  # Textual's prelude line says the app is ready
                line = await stdout.readline()
                if not line or line == b"__GANGLION__\n":
                    break
            handlers = {b"D": self.on_data, b"M": self.on_meta, b"P": self.on_packed}
            while True:
                kind = await stdout.readexactly(1)
                payload = await stdout.readexactly(int.from_bytes(await stdout.readexactly(4), "big"))
                handler = handlers.get(kind)
                if handler is not None:
                    await handler(payload)
        except (asyncio.IncompleteReadError, ConnectionError, RuntimeError):
            pass  # the app ended, or the browser did (a send on a closed websocket)
        except Exception as error:  # a bad packet: end this visitor, keep serving the others
            log.debug("visitor %s: %r", self.app_service_id, error)
        with contextlib.suppress(Exception):
            await self.remote_close()
        self.end()

    def end(self) -> asyncio.Task[None]:
        """End the app (once, however many ask): quit, then SIGTERM, then SIGKILL, and wait for it."""
        if self._ending is None:
            self._ending = asyncio.get_running_loop().create_task(self._end())
        return self._ending

    async def stop(self) -> None:
        await asyncio.shield(self.end())
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    async def _end(self) -> None:
        await self._download_manager.cancel_app_downloads(app_service_id=self.app_service_id)
        process = self._process
        if process is None:
            return
        try:
            await asyncio.wait_for(self.send_meta({"type": "quit"}), QUIT_GRACE)
            await asyncio.wait_for(process.wait(), QUIT_GRACE)
        except (asyncio.TimeoutError, OSError):
            self._signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), TERM_GRACE)
            except asyncio.TimeoutError:
                self._signal(signal.SIGKILL)
                await process.wait()
        live_groups.discard(process.pid)
        if self._stdin is not None:
            self._stdin.close()

    def _signal(self, kind: signal.Signals) -> None:
        assert self._process is not None
        with contextlib.suppress(OSError):
            os.killpg(self._process.pid, kind)
