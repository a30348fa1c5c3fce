"""`attn-tui serve` and a visitor that stops reading: cut off within its bounds, its slot freed; a reader keeps on.

The stuck visitor is a bare socket with a small receive buffer: it does the websocket
handshake, then never reads again, while a thread of its own goes on sending
`["ping", …]` messages, so serve keeps hearing from it. serve runs with its time
limits made small (serve_server's module constants, set in the serve process), so the
tests wait seconds, not minutes.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.limits import limit
from tests.web.test_serve_visitors import START, Visitor, environment, gone

pytestmark = pytest.mark.slow
pytest.importorskip("textual_serve", reason="textual-serve is not installed: pip install 'attn-tui[web]'")


def text_frame(text: str) -> bytes:
    """One masked websocket text frame, as a client sends it."""
    data = text.encode()
    size = len(data)
    if size < 126:
        head = bytes([0x81, 0x80 | size])
    elif size < 65536:
        head = bytes([0x81, 0x80 | 126]) + size.to_bytes(2, "big")
    else:
        head = bytes([0x81, 0x80 | 127]) + size.to_bytes(8, "big")
    mask = os.urandom(4)
    key = int.from_bytes((mask * (size // 4 + 1))[:size], "big")
    masked = (int.from_bytes(data, "big") ^ key).to_bytes(size, "big")
    return head + mask + masked


class StuckVisitor:
    """A browser that opened its websocket and stopped reading: after the handshake, not one byte is read."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
        self.socket.settimeout(limit(30))
        self.socket.connect((parts.hostname, parts.port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.socket.sendall(f"GET /ws?{parts.query}&width=100&height=30 HTTP/1.1\r\nHost: {parts.netloc}\r\n"
                            f"Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
                            "Sec-WebSocket-Version: 13\r\n\r\n".encode())
        head = b""
        while not head.endswith(b"\r\n\r\n"):
            byte = self.socket.recv(1)  # one at a time: nothing after the handshake is read
            assert byte, "serve ended the connection during the handshake"
            head += byte
        self.status = int(head.split()[1])
        self.socket.settimeout(None)  # a send waits as long as serve does not read
        self.ended: OSError | None = None
        self.pinging: threading.Thread | None = None
        self.stop = threading.Event()

    def ping(self, every: float, size: int = 0) -> None:
        """Send ["ping", …] every `every` seconds (each `size` characters more), whole frames only, until cut off."""
        def pings() -> None:
            count = 0
            while not self.stop.is_set():
                try:
                    self.socket.sendall(text_frame(json.dumps(["ping", f"{count} " + "x" * size])))
                except OSError as error:  # serve aborted the connection
                    self.ended = error
                    return
                count += 1
                self.stop.wait(every)

        self.pinging = threading.Thread(target=pings, daemon=True)
        self.pinging.start()

    def cut_off(self, seconds: float) -> bool:
        """Whether serve ended the connection within `seconds` (while this visitor kept sending)."""
        assert self.pinging is not None
        self.pinging.join(limit(seconds))
        return self.ended is not None

    def close(self) -> None:
        self.stop.set()
        self.socket.close()
        if self.pinging is not None:
            self.pinging.join(limit(10))


def take_the_slot(server) -> tuple[StuckVisitor, Path]:
    """A stuck visitor in the one slot, its app started, and a second visitor refused: the slot is taken."""
    stuck = StuckVisitor(server.url)
    assert stuck.status == 101
    (app,) = server.wait_for_apps(1, START)
    folder = Path(environment(app)["ATTN_TUI_STATE_DIR"])
    refused = Visitor(server.url)
    assert refused.said("refused").split()[1] == "503"
    refused.drop()
    return stuck, folder


def the_slot_is_free(server, folder: Path) -> None:
    server.wait_for_apps(0, 30)  # its app ended ...
    gone(folder, 20)  # ... and its folder went, as on a leave
    reader = Visitor(server.url)  # the next visitor is let in, and its app draws
    reader.said("open")
    reader.said("screen", START)
    reader.drop()


def test_a_visitor_that_pings_but_never_reads_is_cut_off_by_the_heartbeat(serve) -> None:
    """Small pings, little output: nothing fills, nothing blocks; only the unanswered heartbeat shows it."""
    server = serve("--max-sessions", "1", WRITE_TIMEOUT=2.0, HEARTBEAT=0.5, CLOSE_TIMEOUT=1.0)
    stuck, folder = take_the_slot(server)
    stuck.ping(every=0.2)
    try:
        assert stuck.cut_off(60), "serve kept a visitor that sends pings and reads nothing"
    finally:
        stuck.close()
    the_slot_is_free(server, folder)


def test_a_send_the_visitor_does_not_read_is_cut_off_after_its_timeout(serve) -> None:
    """Pings of 60 kB whose pongs are never read: the pong serve sends waits on a full connection, not forever.
    The heartbeat is made too slow to act, so only the bound on a send can free the slot."""
    server = serve("--max-sessions", "1", WRITE_TIMEOUT=2.0, HEARTBEAT=3600.0, CLOSE_TIMEOUT=1.0)
    stuck, folder = take_the_slot(server)
    stuck.ping(every=0.01, size=60_000)
    try:
        assert stuck.cut_off(60), "serve waited on a send to a visitor that reads nothing"
    finally:
        stuck.close()
    the_slot_is_free(server, folder)


def test_a_reading_visitor_keeps_its_session_and_pings_do_not_keep_it_from_idling(serve) -> None:
    """A visitor that reads (a little slowly) through bursts of 60 kB pongs, with serve's write bounds made small,
    gets every pong and its screen, and is not cut off; pings are no input, so it ends idle, politely."""
    import aiohttp

    server = serve("--max-sessions", "1", "--idle-minutes", "0.15",  # 9 seconds
                   WRITE_TIMEOUT=2.0, HEARTBEAT=0.5, CLOSE_TIMEOUT=1.0)

    async def visit() -> tuple[int, int, str, float]:
        async with aiohttp.ClientSession() as session:
            url = server.url.replace("http", "ws", 1).replace("/?", "/ws?", 1) + "&width=100&height=30"
            websocket = await session.ws_connect(url)
            opened = time.monotonic()
            deadline = opened + limit(90)
            sent = pongs = drawn = 0
            while time.monotonic() < deadline:
                if sent < 100:  # bursts of ten 60 kB pings while the page reads ...
                    for _ in range(10):
                        await websocket.send_json(["ping", f"{sent} " + "y" * 60_000])
                        sent += 1
                try:
                    message = await websocket.receive(timeout=0.5)
                except asyncio.TimeoutError:  # ... then a small one whenever it is quiet, as the page does
                    await websocket.send_json(["ping", str(time.time())])
                    continue
                if message.type == aiohttp.WSMsgType.BINARY:
                    drawn += len(message.data)
                elif message.type == aiohttp.WSMsgType.TEXT and json.loads(message.data)[0] == "pong":
                    pongs += 1
                elif message.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED,
                                      aiohttp.WSMsgType.CLOSING):
                    return pongs, drawn, str(message.extra), time.monotonic() - opened
                await asyncio.sleep(0.005)  # a browser busy drawing
            raise AssertionError("pings kept an idle visitor")

    pongs, drawn, why, lasted = asyncio.run(visit())
    assert pongs >= 100 and drawn > 2000  # every pong read, and the app's screen
    assert why == "idle" and lasted >= 8  # ended by the idle limit (9 s of no keys), not cut off for not reading
    server.wait_for_apps(0, 30)
