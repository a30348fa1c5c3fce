"""serve's Outlet on its own: every send bounded, unread output bounded, the heartbeat answered only by its echo.

The websocket here is a stand-in whose sends wait until told (a connection that never drains),
and the transport one that counts what waits in it and whether it was aborted.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest

from tests.limits import limit

pytest.importorskip("textual_serve", reason="textual-serve is not installed: pip install 'attn-tui[web]'")

from attn_tui.cli import serve_server  # after the skip: it imports textual-serve
from attn_tui.cli.serve_server import Outlet


class Connection:
    """A websocket and its transport, whose peer reads only when `drains` is set."""

    def __init__(self) -> None:
        self.drains = asyncio.Event()
        self.waiting = 0  # bytes written and not taken
        self.aborted = False
        self.sent: list[tuple[str, Any]] = []

    async def _send(self, kind: str, data: Any) -> None:
        if self.aborted:
            raise ConnectionResetError("aborted")
        self.sent.append((kind, data))
        self.waiting += len(data) if isinstance(data, bytes | str) else 1
        await self.drains.wait()
        self.waiting = 0

    async def send_bytes(self, data: bytes) -> None:
        await self._send("bytes", data)

    async def send_str(self, data: str) -> None:
        await self._send("str", data)

    async def ping(self, data: bytes) -> None:
        await self._send("ping", data)

    async def pong(self, data: bytes) -> None:
        await self._send("pong", data)

    async def close(self, *, message: bytes = b"") -> bool:
        await self._send("close", message)
        return True

    def get_write_buffer_size(self) -> int:
        return 0 if self.aborted else self.waiting

    def abort(self) -> None:
        self.aborted = True


@pytest.fixture
def bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serve_server, "WRITE_TIMEOUT", 0.2)
    monkeypatch.setattr(serve_server, "CLOSE_TIMEOUT", 0.1)
    monkeypatch.setattr(serve_server, "MAX_UNREAD", 1000)


def outlet_on(connection: Connection) -> Outlet:
    return Outlet(connection, connection)  # type: ignore[arg-type]


def test_a_send_that_is_not_taken_in_time_aborts_the_connection(bounds) -> None:
    async def run() -> None:
        connection = Connection()
        outlet = outlet_on(connection)
        for send in (outlet.send_bytes(b"screen"), outlet.send_str('["pong", 1]'), outlet.pong(b"x")):
            with pytest.raises(ConnectionError):
                await asyncio.wait_for(send, limit(10))  # the safety net; the outlet gives up after 0.2 s
            assert connection.aborted
            connection.aborted = False

    asyncio.run(run())


def test_a_close_that_is_not_taken_aborts_without_raising(bounds) -> None:
    async def run() -> None:
        connection = Connection()
        await asyncio.wait_for(outlet_on(connection).close(b"idle"), limit(10))
        assert connection.aborted and connection.sent == [("close", b"idle")]

    asyncio.run(run())


def test_output_piled_up_past_max_unread_aborts_before_sending_more(bounds) -> None:
    async def run() -> None:
        connection = Connection()
        outlet = outlet_on(connection)
        first = asyncio.create_task(outlet.send_bytes(b"x" * 2000))  # waits in the connection, not yet taken
        await asyncio.sleep(0.05)
        with pytest.raises(ConnectionError):
            await outlet.send_bytes(b"more")
        assert connection.aborted and connection.sent == [("bytes", b"x" * 2000)]
        first.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await first

    asyncio.run(run())


def test_a_reader_is_never_cut_off(bounds) -> None:
    async def run() -> None:
        connection = Connection()
        connection.drains.set()
        outlet = outlet_on(connection)
        for _ in range(100):
            await outlet.send_bytes(b"x" * 5000)  # each alone above MAX_UNREAD: taken, so never piled up
            await outlet.heartbeat()
            outlet.answered(connection.sent[-1][1] if connection.sent[-1][0] == "ping" else b"")
        assert not connection.aborted

    asyncio.run(run())


def test_the_heartbeat_is_answered_only_by_its_own_secret(bounds) -> None:
    async def run() -> None:
        connection = Connection()
        connection.drains.set()
        outlet = outlet_on(connection)
        await outlet.heartbeat()
        kind, secret = connection.sent[-1]
        assert kind == "ping" and len(secret) >= 8
        outlet.answered(b"")  # a blind or stale pong is no echo
        outlet.answered(b"\0" * len(secret))
        await asyncio.sleep(0.3)
        with pytest.raises(ConnectionError):
            await outlet.heartbeat()  # unanswered past WRITE_TIMEOUT: cut off
        assert connection.aborted

        connection = Connection()
        connection.drains.set()
        outlet = outlet_on(connection)
        await outlet.heartbeat()
        outlet.answered(connection.sent[-1][1])
        await asyncio.sleep(0.3)
        await outlet.heartbeat()  # answered: a new secret is asked for
        assert [kind for kind, _ in connection.sent] == ["ping", "ping"] and not connection.aborted
        assert connection.sent[0][1] != connection.sent[1][1]

    asyncio.run(run())
