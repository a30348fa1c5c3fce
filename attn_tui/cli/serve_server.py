"""textual-serve's Server made safe to leave running: a gate in front, its own page, visitors kept apart and capped.

What changes from textual-serve, and why:
- every request passes the gate (serve_gate): Host, Origin and the run's secret;
- the page is ours: it loads its font from serve, not from a web-font host (offline, and no third party);
- each websocket gets a VisitorApp (serve_visitor) with its own session folder, a capped terminal,
  an end when the websocket ends or sits idle, and at most `max_sessions` of them at once;
- whatever serve sends a visitor goes through an Outlet: a browser that stops reading is cut off,
  never waited for (textual-serve would wait on its full connection for good, holding its slot);
- serve's end (Ctrl+C, SIGTERM, SIGHUP) closes every websocket and ends every app before it returns.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import json
import logging
import secrets
import shutil
import signal
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn
from urllib.parse import quote

import aiohttp_jinja2
import jinja2
from aiohttp import WSMsgType, web
from textual_serve.server import Server

from attn_tui.cli.serve_gate import Gate
from attn_tui.cli.serve_inbox import Inbox
from attn_tui.cli.serve_visitor import VisitorApp, clamp_size, kill_left_groups
from attn_tui.i18n import _
from attn_tui.present.text import printable

log = logging.getLogger("textual-serve")

PAGE = Path(__file__).with_name("page")
MAX_MESSAGE = 64 * 1024  # bytes in one websocket message: keys and sizes are small
SHUTDOWN_GRACE = 10.0  # seconds aiohttp waits for handlers at exit (they end with their apps)
# A browser that reads is never near these bounds: the app is read no faster than its connection drains,
# so what waits for the browser is a screen or two, and one screen, even a heatmap on the largest terminal
# (400×200), is some hundred kB: a slow link (100 kB/s) takes it in a few seconds, a burst of them stays
# far below MAX_UNREAD. A browser answers pings by itself, however busy its page.
WRITE_TIMEOUT = 30.0  # seconds one send may wait for the visitor's connection to drain, and a heartbeat its echo
MAX_UNREAD = 8 * 1024 * 1024  # bytes sent to a visitor that its connection has not taken: more, and it is cut off
HEARTBEAT = 15.0  # seconds between the pings that ask a visitor's browser to show it still reads
CLOSE_TIMEOUT = 5.0  # seconds a close waits to be taken: what the browser has not read by then is of a session gone


def own_exports(export_dir: Path) -> Path:
    """A visitor's own folder in serve's export folder, named by the time they came: two visitors exporting
    under the same name (the dialog offers the same one) never overwrite, nor download, each other's file."""
    return Path(tempfile.mkdtemp(prefix=time.strftime("visitor-%Y%m%d-%H%M%S-"), dir=export_dir))


class OneLine(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        lines = printable(record.getMessage()).splitlines() or [""]
        return f"attn-tui serve: {lines[0][:200]}"


class Outlet:
    """What serve sends one visitor (app output, pongs, pings, the close), each send bounded.

    aiohttp's send waits for the connection to drain, and a peer that keeps the connection open
    but never reads keeps it from draining: the send waits for good, and with it the app's output,
    the pongs and the idle close. Here a send waits at most WRITE_TIMEOUT (a close CLOSE_TIMEOUT),
    output waiting in serve never passes MAX_UNREAD, and a ping carrying a secret must be echoed
    within WRITE_TIMEOUT: a peer can echo it only by reading all that came before it, so a visitor
    that sends messages but reads none is found too (aiohttp's own heartbeat counts any message it
    receives as a sign of life). Past any bound the connection is aborted, not closed (a close waits
    on the same full connection); the visitor then ends as one who left: its app stopped, its
    folders removed, its slot free."""

    def __init__(self, websocket: web.WebSocketResponse, transport: asyncio.Transport | None) -> None:
        self.websocket, self.transport = websocket, transport
        self.asked: bytes | None = None  # the secret of the heartbeat ping not yet echoed
        self.asked_at = 0.0

    def unread(self) -> int:
        """Bytes sent that wait in serve: the connection's own buffers are full, its peer not reading them."""
        return 0 if self.transport is None else self.transport.get_write_buffer_size()

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    async def send_bytes(self, data: bytes) -> None:
        await self._send(lambda: self.websocket.send_bytes(data), WRITE_TIMEOUT)

    async def send_str(self, data: str) -> None:
        await self._send(lambda: self.websocket.send_str(data), WRITE_TIMEOUT)

    async def pong(self, data: bytes) -> None:
        await self._send(lambda: self.websocket.pong(data), WRITE_TIMEOUT)

    async def close(self, message: bytes = b"") -> None:
        """Close politely if the connection takes it soon; abort it otherwise: either way it has ended."""
        with contextlib.suppress(ConnectionError):
            await self._send(lambda: self.websocket.close(message=message), CLOSE_TIMEOUT)

    def answered(self, data: bytes) -> None:
        if data == self.asked:
            self.asked = None

    async def heartbeat(self) -> None:
        """Ask for the echo of a fresh secret, or, when the last one is not echoed after WRITE_TIMEOUT, cut off."""
        now = asyncio.get_running_loop().time()
        if self.asked is None:
            self.asked = asked = secrets.token_bytes(8)
            self.asked_at = now
            await self._send(lambda: self.websocket.ping(asked), WRITE_TIMEOUT)
        elif now - self.asked_at >= WRITE_TIMEOUT:
            self.cut_off()

    def cut_off(self) -> NoReturn:
        self.abort()
        raise ConnectionResetError("the visitor's browser no longer reads what serve sends")

    async def _send(self, send: Callable[[], Awaitable[object]], seconds: float) -> None:
        if self.unread() > MAX_UNREAD:
            self.cut_off()
        try:
            await asyncio.wait_for(send(), seconds)
        except asyncio.TimeoutError:
            self.cut_off()


class GuardedServer(Server):
    def __init__(self, *, host: str, port: int, gate: Gate, export_dir: Path, max_sessions: int,
                 idle_timeout: float, public_url: str | None = None) -> None:
        super().__init__("attn-tui", host=host, port=port, title="attn-tui", public_url=public_url,
                         templates_path=PAGE)
        self.given_public_url = public_url
        self.gate, self.export_dir = gate, export_dir
        self.max_sessions, self.idle_timeout = max_sessions, idle_timeout
        self.visitors: set[VisitorApp] = set()
        self.folder = Path(tempfile.gettempdir())  # replaced by this run's own folder for the visitors' sessions

    async def _make_app(self) -> web.Application:
        app = web.Application(middlewares=[self.gate.middleware], client_max_size=MAX_MESSAGE)
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path), autoescape=True)
        app.add_routes([
            web.get("/", self.handle_index, name="index"),
            web.get("/ws", self.handle_websocket, name="websocket"),
            web.get("/download/{key}", self.handle_download, name="download"),
            web.static("/static", self.statics_path, name="static"),  # no folder listings
        ])
        app.on_shutdown.append(self.on_shutdown)
        return app

    def base_url(self, request: web.Request) -> str:
        """Where the page's own requests go: the public URL, else the address the browser used."""
        return (self.given_public_url or f"http://{request.host}").rstrip("/")

    @aiohttp_jinja2.template("app_index.html")
    async def handle_index(self, request: web.Request) -> dict[str, Any]:
        base = self.base_url(request)
        try:
            font_size = min(max(int(request.query.get("fontsize", "16")), 6), 48)
        except ValueError:
            font_size = 16
        socket = ("wss:" if base.startswith("https:") else "ws:") + base.split(":", 1)[1] + "/ws"
        return {"font_size": font_size, "app_websocket_url": socket, "config": {"static": {"url": base + "/static/"}},
                "application": {"name": self.title}, "start": _("Start"), "restart": _("Restart"),
                "ended": _("Session ended.")}

    async def handle_download(self, request: web.Request) -> web.StreamResponse:
        """A file a visitor's app offered, by its random key: the name quoted for any language, no echo of the
        key asked for, and a policy that keeps a file opened in the browser from running script on serve's page."""
        try:
            meta = await self.download_manager.get_download_metadata(request.match_info["key"])
        except KeyError:
            return web.Response(status=404, text=_("attn-tui: no such download (it ends with its visitor)") + "\n",
                                headers={"X-Content-Type-Options": "nosniff"})
        kind = meta.mime_type + (f"; charset={meta.encoding}" if meta.encoding else "")
        disposition = "inline" if meta.open_method == "browser" else "attachment"
        response = web.StreamResponse(headers={
            "Content-Type": kind, "X-Content-Type-Options": "nosniff", "Cache-Control": "no-store",
            "Content-Disposition": f"{disposition}; filename*=UTF-8''{quote(meta.file_name, safe='')}",
            "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox"})
        await response.prepare(request)
        async for chunk in self.download_manager.download(meta.delivery_key):
            await response.write(chunk)
        await response.write_eof()
        return response

    async def handle_websocket(self, request: web.Request) -> web.StreamResponse:  # type: ignore[override]
        if len(self.visitors) >= self.max_sessions:
            return web.Response(status=503, text=_("attn-tui: {n} visitors already; try again later")
                                .format(n=self.max_sessions) + "\n")
        width, height = clamp_size(request.query.get("width"), request.query.get("height"))
        websocket = web.WebSocketResponse(autoping=False, max_msg_size=MAX_MESSAGE)  # pings: Outlet's heartbeat
        if not websocket.can_prepare(request).ok:
            return web.Response(status=400, text=_("attn-tui: this address takes a websocket") + "\n")
        outlet = Outlet(websocket, request.transport)
        folder = Path(tempfile.mkdtemp(prefix="visitor-", dir=self.folder))
        exports = own_exports(self.export_dir)
        visitor = VisitorApp(folder=folder, export_dir=exports, write_bytes=outlet.send_bytes,
                             write_str=outlet.send_str, close=outlet.close,
                             download_manager=self.download_manager, debug=self.debug)
        self.visitors.add(visitor)  # before any await: visitors arriving together are counted together
        try:
            await websocket.prepare(request)
            await visitor.start(width, height)
            watch = asyncio.create_task(self._watch(visitor, outlet))
            try:
                await self._pass_messages(websocket, outlet, visitor)
            finally:
                watch.cancel()
        except asyncio.CancelledError:
            pass
        except Exception as error:
            log.debug("visitor %s: %r", visitor.app_service_id, error)
        finally:
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.shield(visitor.stop())
            self.visitors.discard(visitor)
            shutil.rmtree(folder, ignore_errors=True)
            with contextlib.suppress(OSError):
                exports.rmdir()  # kept only when the visitor exported something
            with contextlib.suppress(Exception):
                await outlet.close()
            if outlet.unread():  # closed, but what is left will never be read: a close would wait for it for good
                outlet.abort()
        return websocket

    async def _pass_messages(self, websocket: web.WebSocketResponse, outlet: Outlet, visitor: VisitorApp) -> None:
        """The browser's messages to the app; anything malformed is dropped, a size is capped.

        The app is written to by a task of its own (Inbox), so an app busy with a backlog never keeps
        serve from reading the websocket and seeing its visitor leave; the backlog is bounded."""
        inbox = Inbox()
        feeder = asyncio.create_task(inbox.feed(visitor))
        try:
            async for message in websocket:
                if message.type == WSMsgType.PING:
                    await outlet.pong(message.data)
                elif message.type == WSMsgType.PONG:
                    outlet.answered(message.data)
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    envelope = json.loads(message.data)
                except ValueError:
                    continue
                if not isinstance(envelope, list) or not envelope:
                    continue
                kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
                if kind == "stdin" and isinstance(data, str):
                    visitor.touch()
                    inbox.key(data.encode("utf-8", "replace"))
                elif kind == "resize" and isinstance(data, dict):
                    visitor.touch()
                    inbox.resize(*clamp_size(data.get("width"), data.get("height")))
                elif kind == "ping":  # no input: a page left open pings on, and is idle all the same
                    await outlet.send_str(json.dumps(["pong", data]))
                elif kind in ("blur", "focus"):
                    inbox.focus(kind == "focus")
        finally:
            feeder.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await feeder

    async def _watch(self, visitor: VisitorApp, outlet: Outlet) -> None:
        """Close the websocket of a visitor who typed nothing for idle_timeout; cut off one who stopped reading."""
        loop = asyncio.get_running_loop()
        while True:
            left = visitor.last_input + self.idle_timeout - loop.time()
            if left <= 0:
                await outlet.close(b"idle")
                return
            try:
                await outlet.heartbeat()
            except ConnectionError:  # cut off (or gone): the websocket's reader sees the end and the visitor ends
                return
            await asyncio.sleep(min(left + 0.05, HEARTBEAT))

    async def on_shutdown(self, app: web.Application) -> None:
        """Serve is ending: every visitor's websocket closes and every app ends before the server returns."""
        visitors = list(self.visitors)
        await asyncio.gather(*(visitor.remote_close() for visitor in visitors), return_exceptions=True)
        await asyncio.gather(*(visitor.stop() for visitor in visitors), return_exceptions=True)

    def initialize_logging(self) -> None:
        """Warnings as one printable line each on stderr, never a traceback (--debug: textual-serve's own log)."""
        if self.debug:
            super().initialize_logging()
            return
        handler = logging.StreamHandler()
        handler.setFormatter(OneLine())
        logging.basicConfig(level=logging.WARNING, handlers=[handler], force=True)

    def serve(self, debug: bool = False) -> None:
        """Run until Ctrl+C, SIGTERM or SIGHUP; every app serve started has ended when this returns."""
        self.debug = debug
        self.initialize_logging()
        atexit.register(kill_left_groups)
        self.folder = Path(tempfile.mkdtemp(prefix="attn-tui-serve-"))
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        for kind in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            loop.add_signal_handler(kind, self.request_exit)
        try:
            web.run_app(self._make_app(), host=self.host, port=self.port, handle_signals=False, loop=loop,
                        print=None, access_log=logging.getLogger("aiohttp.access") if debug else None,
                        shutdown_timeout=SHUTDOWN_GRACE)
        finally:
            kill_left_groups()
            shutil.rmtree(self.folder, ignore_errors=True)
