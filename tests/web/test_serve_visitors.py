"""`attn-tui serve` with real visitors on 127.0.0.1: each its own app and folder, capped, and no app left behind.

Visitors are small websocket clients in child processes, so a test can drop one the way
a browser that exits does (SIGKILL: no close frame). Apps are found by the environment
serve gives them (ATTN_TUI_SERVE_PID), so an app that outlived serve is found too.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import pytest

from tests.limits import limit
from tests.web.test_serve import free_port, served_url

pytestmark = pytest.mark.slow
pytest.importorskip("textual_serve", reason="textual-serve is not installed: pip install 'attn-tui[web]'")

START = limit(120.0)  # seconds for an app's first bytes (it imports Textual on a busy machine)
VISITOR = r"""
import asyncio, sys, aiohttp
async def main(url, width, height, origin, resize):
    async with aiohttp.ClientSession() as session:
        try:
            socket = await session.ws_connect(f"{url}&width={width}&height={height}".replace("http", "ws", 1)
                                              .replace("/?", "/ws?", 1), headers={"Origin": origin} if origin else {})
        except aiohttp.WSServerHandshakeError as refused:
            print("refused", refused.status, flush=True)
            return
        print("open", flush=True)
        seen = 0
        async for message in socket:
            if message.type == aiohttp.WSMsgType.BINARY:
                seen += len(message.data)
                if seen > 2000:
                    print("screen", flush=True)
                    seen = -10**12
                    if resize:  # what the page sends when its window changes, asked of a huge window
                        await socket.send_json(["resize", {"width": int(resize), "height": int(resize)}])
                        await socket.send_json(["stdin", "8"])
        print("closed", flush=True)
asyncio.run(main(*sys.argv[1:4], sys.argv[4] or None, sys.argv[5] or None))
"""


class Serve:
    def __init__(self, folder: Path, *options: str, **bounds: float) -> None:
        """serve on a free port; `bounds` set serve_server's module constants (its time limits) in that process."""
        self.port = free_port()
        start = ["-m", "attn_tui"]
        if bounds:  # python -c: sys.argv[1:] is what follows, as with -m
            start = ["-c", "import attn_tui.cli.serve_server as bounds\n"
                     + "".join(f"assert hasattr(bounds, {name!r})\nbounds.{name} = {value!r}\n"
                               for name, value in bounds.items())
                     + "from attn_tui.cli import main\nraise SystemExit(main())"]
        self.process = subprocess.Popen([sys.executable, *start, "serve", "--port", str(self.port), *options],
                                        cwd=folder, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env={**os.environ, "ATTN_TUI_LANG": "en", "TMPDIR": str(folder),
                                             "ATTN_TUI_STATE_DIR": str(folder / "state")},
                                        start_new_session=True)
        self.url = served_url(self.process, self.port)

    def apps(self) -> list[int]:
        """Every live process whose environment names this serve as its parent (zombies are not alive)."""
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                environ = (entry / "environ").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if f"ATTN_TUI_SERVE_PID={self.process.pid}".encode() in environ and state != "Z":
                found.append(int(entry.name))
        return found

    def wait_for_apps(self, count: int, seconds: float = 30.0) -> list[int]:
        deadline = time.monotonic() + limit(seconds)
        while len(apps := self.apps()) != count:
            assert time.monotonic() < deadline, f"{len(apps)} apps, not {count}"
            time.sleep(0.2)
        return apps

    def end(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=limit(30))
        for stream in (self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()


class Visitor:
    def __init__(self, url: str, width: int = 100, height: int = 30, origin: str = "", resize: int = 0) -> None:
        self.process = subprocess.Popen([sys.executable, "-c", VISITOR, url, str(width), str(height), origin,
                                         str(resize or "")],
                                        stdout=subprocess.PIPE, text=True)

    def said(self, word: str, seconds: float = 120.0) -> str:
        assert self.process.stdout is not None
        deadline = time.monotonic() + limit(seconds)
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            assert line, f"the visitor ended before saying {word!r}"
            if line.startswith(word):
                return line
        raise AssertionError(f"the visitor never said {word!r}")

    def drop(self) -> None:
        """The browser vanishes: no close frame, the connection just ends."""
        self.process.kill()
        self.process.wait(timeout=limit(10))
        if self.process.stdout is not None:
            self.process.stdout.close()


def gone(path: Path, seconds: float) -> None:
    deadline = time.monotonic() + limit(seconds)
    while path.exists():
        assert time.monotonic() < deadline, f"{path} is left"
        time.sleep(0.2)


def environment(pid: int) -> dict[str, str]:
    pairs = (Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace").split("\0"))
    return dict(pair.split("=", 1) for pair in pairs if "=" in pair)


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def test_dropped_visitors_leave_no_app_and_no_folder(serve) -> None:
    server = serve("--max-sessions", "3")
    folders, own_exports = set(), set()
    memory = []
    for round_ in range(4):
        visitor = Visitor(server.url, 20000, 20000)
        visitor.said("open")
        if round_ % 2:  # dropped while the app starts, or once it has drawn its screen
            visitor.said("screen")
        (app,) = server.wait_for_apps(1)
        seen = environment(app)
        assert (seen["COLUMNS"], seen["ROWS"]) == ("400", "200")  # 20000×20000 asked for, capped
        exports = Path(seen["ATTN_TUI_EXPORT_DIR"])  # the visitor's own folder in serve's
        assert seen["ATTN_TUI_SERVED"] == "1" and exports.parent.name == "attn-tui-exports" and exports.is_dir()
        folders.add(seen["ATTN_TUI_STATE_DIR"])
        own_exports.add(exports)
        visitor.drop()
        server.wait_for_apps(0)  # raises if an app is left
        gone(Path(seen["ATTN_TUI_STATE_DIR"]), 20)  # its session folder goes with it
        memory.append(rss_mb(server.process.pid))
    assert len(folders) == 4 and len(own_exports) == 4  # each visitor its own session and export folder
    assert not any(own.exists() for own in own_exports)  # nothing exported: no folder left
    before = cpu_seconds(server.process.pid)
    time.sleep(3)
    assert cpu_seconds(server.process.pid) - before < 0.3  # nothing spins once the visitors have gone
    assert memory[-1] - memory[0] < 40, memory
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=limit(20)) == 0
    err = server.process.stderr.read().decode()
    assert "Traceback" not in err and "\x1b" not in err and len(err.strip().splitlines()) <= 1, err


def test_serve_ending_ends_every_app(serve) -> None:
    for how in (signal.SIGTERM, signal.SIGINT, signal.SIGKILL):
        server = serve()
        visitors = [Visitor(server.url) for _ in range(2)]
        for visitor in visitors:
            visitor.said("screen")
        apps = server.wait_for_apps(2)
        os.kill(server.process.pid, how)  # SIGKILL: the apps learn it from Linux (their parent-death signal)
        server.process.wait(timeout=limit(30))
        deadline = time.monotonic() + limit(15)
        while any(Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
                  for pid in apps):
            assert time.monotonic() < deadline, f"apps left after {how.name}"
            time.sleep(0.2)
        for visitor in visitors:
            visitor.said("closed", 30)
            visitor.drop()


def test_an_app_ends_on_sigterm_and_its_visitor_is_told(serve) -> None:
    server = serve()
    visitor = Visitor(server.url)
    visitor.said("screen")
    (app,) = server.wait_for_apps(1)
    os.kill(app, signal.SIGTERM)
    visitor.said("closed", 20)
    server.wait_for_apps(0, 10)
    visitor.drop()


def test_visitors_are_capped_and_an_idle_one_ends(serve) -> None:
    server = serve("--max-sessions", "1", "--idle-minutes", "0.15")  # 9 seconds
    first = Visitor(server.url)
    first.said("screen")
    second = Visitor(server.url)
    assert second.said("refused").split()[1] == "503"
    second.drop()
    started = time.monotonic()
    first.said("closed", 60)  # idle: no key since it opened
    assert time.monotonic() - started < limit(30)
    server.wait_for_apps(0, 15)
    first.drop()
    third = Visitor(server.url)  # the place is free again
    third.said("open")
    third.drop()
    server.wait_for_apps(0, 30)


def test_the_token_and_serve_own_origin_are_needed_even_on_loopback(serve) -> None:
    server = serve()
    page = server.url.split("?")[0]
    for url, origin in ((page + "?token=wrong", ""), (page + "?", ""), (server.url, "http://evil.example"),
                        (server.url, f"http://127.0.0.1:{server.port + 1}")):  # another site's page, with the token
        visitor = Visitor(url, origin=origin)
        assert visitor.said("refused").split()[1] == "403"
        visitor.drop()
    assert server.apps() == []
    import urllib.error
    import urllib.request

    with pytest.raises(urllib.error.HTTPError) as plain:  # the websocket's address asked for a page
        urllib.request.urlopen(server.url.replace("/?", "/ws?", 1), timeout=limit(30))
    assert plain.value.code == 400
    own = Visitor(server.url, origin=page.rstrip("/"))  # the page serve served opens its websocket
    own.said("open")
    own.drop()
    server.wait_for_apps(0, 30)
    server.process.send_signal(signal.SIGINT)
    server.process.wait(timeout=limit(30))
    assert not server.process.stdout.read()
    assert server.process.stderr.read().decode().splitlines()[1:] == []  # after its start lines: no log, no traceback


def test_a_huge_resize_is_capped_and_the_session_is_the_visitor_own(serve, tmp_path: Path) -> None:
    server = serve()
    visitor = Visitor(server.url, resize=20000)  # then the key 8: the weights stage, which the session keeps
    visitor.said("screen")
    (app,) = server.wait_for_apps(1)
    own = Path(environment(app)["ATTN_TUI_STATE_DIR"])
    peak = 0.0
    for _ in range(20):  # ten seconds of the app drawing whatever size it was given
        peak = max(peak, rss_mb(app))
        time.sleep(0.5)
    assert (own / "session.json").is_file()  # saved in this visitor's folder
    assert not (tmp_path / "state" / "session.json").exists()  # not in the session of the person who started serve
    assert peak < 600, peak  # uncapped, 20000×20000 passed 900 MB in these ten seconds and grew; capped: about 300
    visitor.drop()
    server.wait_for_apps(0)


def test_an_export_lands_in_serve_folder_and_in_the_visitor_browser(serve, tmp_path: Path) -> None:
    """Keys over the websocket open the export dialog and take its offered path; the page is handed the file."""
    import asyncio
    import json

    import aiohttp

    server = serve()

    async def visit() -> tuple[str, bytes]:
        async with aiohttp.ClientSession() as session:
            socket = await session.ws_connect(server.url.replace("http", "ws", 1).replace("/?", "/ws?", 1)
                                              + "&width=100&height=32")
            deadline = time.monotonic() + START
            next_try = time.monotonic() + 5
            while time.monotonic() < deadline:
                if time.monotonic() > next_try:  # until torch has loaded and there is a trace: e, then Enter
                    await socket.send_json(["stdin", "e"])
                    await asyncio.sleep(1.5)
                    await socket.send_json(["stdin", "\r"])
                    next_try = time.monotonic() + 5
                try:
                    message = await socket.receive(timeout=0.5)
                except asyncio.TimeoutError:
                    continue
                if message.type == aiohttp.WSMsgType.TEXT and json.loads(message.data)[0] == "deliver_file_start":
                    key = json.loads(message.data)[1]
                    async with session.get(server.url.replace("/?", f"/download/{key}?", 1)) as download:
                        assert download.status == 200
                        name = unquote(download.headers["Content-Disposition"].rsplit("filename*=UTF-8''", 1)[1])
                        return name, await download.read()
                assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
            raise AssertionError("no file was offered")

    name, body = asyncio.run(visit())
    [own] = (tmp_path / "attn-tui-exports").iterdir()  # the visitor's own folder in serve's
    assert own.name.startswith("visitor-") and [p.name for p in own.iterdir()] == [name]
    assert (own / name).read_bytes() == body and json.loads(body)  # the very file serve's folder holds, whole
    server.wait_for_apps(0, 30)


def test_malformed_messages_are_dropped_and_an_oversized_one_ends_only_its_visitor(serve) -> None:
    import asyncio

    import aiohttp

    server = serve()

    async def visit() -> None:
        async with aiohttp.ClientSession() as session:
            url = server.url.replace("http", "ws", 1).replace("/?", "/ws?", 1) + "&width=x&height=-1"
            socket = await session.ws_connect(url)
            for junk in ("not json", "{}", "[]", "5", '["stdin", 5]', '["resize", {"width": "x", "height": null}]',
                         '["resize", [1, 2]]', '["nonsense", 1]', '["stdin"]', '["resize", {"width": 1e999}]'):
                await socket.send_str(junk)
            await socket.send_bytes(b"\x00\xff binary")
            await socket.send_json(["ping", "still here"])
            while True:
                message = await socket.receive(timeout=START)
                assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
                if message.type == aiohttp.WSMsgType.TEXT and message.data == '["pong", "still here"]':
                    break
            assert len(server.apps()) == 1
            await socket.send_str('["stdin", "' + "x" * 100_000 + '"]')  # over the 64 KiB a message may hold
            while (message := await socket.receive(timeout=limit(30))).type not in (aiohttp.WSMsgType.CLOSE,
                                                                              aiohttp.WSMsgType.CLOSED):
                pass

    asyncio.run(visit())
    server.wait_for_apps(0, 30)
    assert server.process.poll() is None  # serve goes on for the next visitor
    again = Visitor(server.url)
    again.said("screen")
    again.drop()


def test_a_flood_of_keys_and_sizes_never_keeps_a_gone_visitor_app_alive(serve) -> None:
    """A page that sends keys and sizes faster than its app takes them, then vanishes: the app ends within
    seconds and the slot is free (serve once sat writing the backlog into the busy app, minutes long)."""
    import asyncio

    import aiohttp

    server = serve("--max-sessions", "1")

    async def flood() -> None:
        async with aiohttp.ClientSession() as session:
            url = server.url.replace("http", "ws", 1).replace("/?", "/ws?", 1)
            socket = await session.ws_connect(url)
            while (await socket.receive(timeout=START)).type != aiohttp.WSMsgType.BINARY:
                pass  # the app is up and drawing
            for _ in range(20_000):
                await socket.send_str('["stdin", "' + "j" * 30 + '"]')
            for n in range(3_000):
                await socket.send_json(["resize", {"width": 10 + n % 390, "height": 4 + n % 196}])
            for n in range(2_000):
                await socket.send_json(["blur" if n % 2 else "focus"])
            assert len(server.apps()) == 1
            await socket.close()

    asyncio.run(flood())
    server.wait_for_apps(0, 15)
    again = Visitor(server.url)  # the one slot is free again
    again.said("screen")
    again.drop()
    server.wait_for_apps(0, 30)


def test_a_download_key_that_is_not_one_is_a_plain_404_without_its_echo(serve) -> None:
    import urllib.error
    import urllib.request

    server = serve()
    for key in ("%1b%5d0%3bpwned%07", "..%2f..%2fetc%2fpasswd", "0" * 32, "%2e%2e"):
        with pytest.raises(urllib.error.HTTPError) as missing:
            urllib.request.urlopen(server.url.replace("/?", f"/download/{key}?", 1), timeout=limit(30))
        body = missing.value.read()
        assert missing.value.code == 404 and body.isascii() and b"\x1b" not in body and b"passwd" not in body, key
        assert missing.value.headers["X-Content-Type-Options"] == "nosniff"


HOSTILE_TEXT = ("\x1b]0;PWNTITLE\x07\x1b]52;c;UFdO\x07\x1b[31mRED\x1b]8;;http://evil.example/\x1b\\LINK"
                "\x1b]8;;\x1b\\\x9b31m\x07bell\u202eRTL")


def test_escape_sequences_a_visitor_types_or_pastes_are_never_echoed_raw(serve) -> None:
    """Typed and pasted text holding terminal controls (title, clipboard, links, C1, bidi): the page's terminal
    gets the app's drawing of it, never the controls themselves."""
    import asyncio

    import aiohttp

    server = serve()

    async def visit() -> bytes:
        async with aiohttp.ClientSession() as session:
            socket = await session.ws_connect(server.url.replace("http", "ws", 1).replace("/?", "/ws?", 1)
                                              + "&width=120&height=40")
            drawn = bytearray()

            async def read(seconds: float, first: bool = False) -> None:
                """What the page is sent for `seconds`; `first`: only until its first bytes."""
                deadline = time.monotonic() + seconds
                while (left := deadline - time.monotonic()) > 0 and not (first and drawn):
                    try:
                        message = await asyncio.wait_for(socket.receive(), left)
                    except asyncio.TimeoutError:
                        return
                    assert message.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), message
                    if message.type == aiohttp.WSMsgType.BINARY:
                        drawn.extend(message.data)

            await read(START, first=True)
            assert drawn, "the app never drew"
            await read(5)
            start = len(drawn)
            for keys in ("i", "\x1b[200~" + HOSTILE_TEXT + "\x1b[201~", HOSTILE_TEXT):
                await socket.send_json(["stdin", keys])
                await read(4)
            await socket.close()
            return bytes(drawn[start:])

    echoed = asyncio.run(visit())
    assert b"PWNTITLE" in echoed and b"RED" in echoed  # the text was drawn ...
    for control in (b"\x1b]0;", b"\x1b]52", b"\x1b]8;;http://evil", b"\x07", b"\xc2\x9b", "\u202e".encode()):
        assert control not in echoed, control  # ... and none of its controls reached the page's terminal
    server.wait_for_apps(0, 30)
