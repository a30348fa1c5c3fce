"""serve's gate in front of every route: Host, Origin and the run's token, driven over real HTTP on 127.0.0.1.

No app is started: every refusal happens before a websocket could start one, and the
routes behind the gate here only say they were reached.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

pytest.importorskip("textual_serve", reason="textual-serve is not installed: pip install 'attn-tui[web]'")

from aiohttp import ClientSession, CookieJar, WSServerHandshakeError, web

from attn_tui.cli.serve_gate import gate_for, new_secret
from attn_tui.cli.serve_visitor import MAX_COLUMNS, MAX_ROWS, clamp_size
from tests.limits import limit

SECRET = new_secret()


async def _reached(request: web.Request) -> web.StreamResponse:
    if request.path == "/ws":
        socket = web.WebSocketResponse()
        await socket.prepare(request)
        await socket.send_str("in")
        await socket.close()
        return socket
    return web.Response(text="in")


def with_gate(check: Callable[[ClientSession, str, int], Awaitable[None]], public_url: str | None = None) -> None:
    """Run `check(session, base_url, port)` against the gate on a free loopback port."""
    async def main() -> None:
        app = web.Application()
        runner = web.AppRunner(app)
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        gate = gate_for("127.0.0.1", port, public_url, SECRET)
        app.middlewares.append(gate.middleware)
        app.router.add_get("/", _reached)
        app.router.add_get("/ws", _reached)
        app.router.add_get("/static/{name}", _reached)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as session:  # a browser keeps an IP's cookie
                await check(session, f"http://127.0.0.1:{port}", port)
        finally:
            await runner.cleanup()

    asyncio.run(main())


def test_without_the_token_a_visitor_gets_nothing() -> None:
    async def check(session: ClientSession, base: str, port: int) -> None:
        for path in ("/", "/static/textual.js", f"/?token={SECRET[:-1]}", "/?token=", f"/?token={SECRET}x"):
            async with session.get(base + path) as response:
                assert response.status == 403, path
                assert await response.text() != "in"
        async with session.get(f"{base}/?token={SECRET}") as response:
            assert response.status == 200 and await response.text() == "in"
            assert "default-src 'self'" in response.headers["Content-Security-Policy"]
            assert response.headers["Referrer-Policy"] == "no-referrer"
        # the page's cookie lets its own later requests in (the websocket, static files, downloads)
        async with session.get(f"{base}/static/textual.js") as response:
            assert response.status == 200
        async with session.ws_connect(f"{base}/ws?width=80&height=24", headers={"Origin": base}) as socket:
            assert (await socket.receive()).data == "in"

    with_gate(check)


def test_a_foreign_origin_or_host_is_refused_even_with_the_token() -> None:
    async def check(session: ClientSession, base: str, port: int) -> None:
        for origin in ("http://evil.example", f"http://evil.example:{port}", "null", f"https://127.0.0.1:{port}",
                       f"http://127.0.0.1:{port + 1}", f"http://127.0.0.1.evil.example:{port}"):
            with pytest.raises(WSServerHandshakeError) as refused:
                await session.ws_connect(f"{base}/ws?token={SECRET}", headers={"Origin": origin})
            assert refused.value.status == 403, origin
        for host in (f"evil.example:{port}", f"127.0.0.1:{port + 1}", "127.0.0.1", f"attacker.localhost:{port}", ""):
            async with session.get(f"{base}/?token={SECRET}", headers={"Host": host}) as response:
                assert response.status == 403, host  # DNS rebinding: another name for this address
        for host in (f"localhost:{port}", f"127.0.0.1:{port}", f"[::1]:{port}", f"LOCALHOST:{port}"):
            async with session.get(f"{base}/?token={SECRET}", headers={"Host": host}) as response:
                assert response.status == 200, host
        async with session.ws_connect(f"{base}/ws?token={SECRET}", headers={"Origin": f"http://localhost:{port}",
                                                                            "Host": f"localhost:{port}"}) as socket:
            assert (await socket.receive()).data == "in"

    with_gate(check)


async def _raw(port: int, head: str) -> str:
    """One request as written, byte for byte (what a client library would tidy), and the status line back."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head.encode("latin-1") + b"Connection: close\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), limit(10))
    writer.close()
    return answer.split(b"\r\n", 1)[0].decode("latin-1")


def test_a_request_line_or_repeated_header_that_names_another_host_is_refused() -> None:
    async def check(session: ClientSession, base: str, port: int) -> None:
        ours, token = f"Host: 127.0.0.1:{port}\r\n", f"token={SECRET}"
        for head in (f"GET http://evil.example:{port}/?{token} HTTP/1.1\r\n{ours}",  # absolute form
                     f"GET http://evil.example/?{token} HTTP/1.1\r\n{ours}",
                     f"GET /?{token} HTTP/1.1\r\n{ours}Origin: http://127.0.0.1:{port}\r\nOrigin: null\r\n",
                     f"GET /?{token} HTTP/1.1\r\n{ours}Origin: http://evil.example\r\nOrigin: http://127.0.0.1:{port}\r\n",
                     f"GET /?{token} HTTP/1.1\r\nHost: 127.0.0.1.:{port}\r\n",
                     f"GET /?{token} HTTP/1.1\r\nHost: localhost.:{port}\r\n",
                     f"GET /?{token} HTTP/1.1\r\nHost: 0x7f.1:{port}\r\n",
                     f"GET /?{token} HTTP/1.1\r\nHost: 127.1:{port}\r\n",
                     f"GET /?{token} HTTP/1.1\r\nHost: 127.0.0.1:0{port}\r\n",
                     f"GET /?{token} HTTP/1.1\r\nHost: x@127.0.0.1:{port}\r\n",
                     f"GET /?{token} HTTP/1.0\r\n"):
            status = await _raw(port, head)
            assert status.split()[1] in ("400", "403"), (head, status)
        referer = f"Referer: http://127.0.0.1:{port}/?{token}\r\n"  # the token elsewhere than the URL or cookie
        assert (await _raw(port, f"GET / HTTP/1.1\r\n{ours}{referer}")).split()[1] == "403"
        assert (await _raw(port, f"GET /?{token} HTTP/1.1\r\n{ours}")).split()[1] == "200"

    with_gate(check)


def test_behind_a_proxy_its_public_origin_is_let_in() -> None:
    async def check(session: ClientSession, base: str, port: int) -> None:
        headers = {"Origin": "https://attn.example.org", "Host": "attn.example.org"}
        async with session.ws_connect(f"{base}/ws?token={SECRET}", headers=headers) as socket:
            assert (await socket.receive()).data == "in"
        with pytest.raises(WSServerHandshakeError):
            await session.ws_connect(f"{base}/ws?token={SECRET}", headers={**headers, "Origin": "https://evil.org"})

    with_gate(check, public_url="https://attn.example.org/")


def test_a_terminal_size_is_capped() -> None:
    assert clamp_size("20000", "20000") == (MAX_COLUMNS, MAX_ROWS)
    assert clamp_size(-5, 0) == (10, 4)
    assert clamp_size("80", "24") == (80, 24)
    assert clamp_size(None, "x") == (80, 24)
    assert clamp_size("1e9", 10**100) == (80, MAX_ROWS)
    assert clamp_size({"a": 1}, [1]) == (80, 24)


def test_wildcard_address_lets_any_host_in_but_only_its_own_origin() -> None:
    gate = gate_for("0.0.0.0", 8000, None, SECRET)
    assert gate.host_allowed("192.168.1.5:8000") and not gate.host_allowed("")
    assert gate.origin_allowed("http://192.168.1.5:8000", "192.168.1.5:8000")
    assert not gate.origin_allowed("http://evil.example", "192.168.1.5:8000")
    assert not gate.has_secret(None) and not gate.has_secret("") and gate.has_secret(SECRET)
    assert not gate.has_secret("\udcff" + SECRET)
