"""`attn-tui serve` in a real browser: headless Chromium opens the page, keys are pressed, the app's screen follows.

The page draws the terminal on a canvas, so the test reads the screen the way the page
does: the bytes the server sends are kept as they arrive (a hook on WebSocket set before
the page's own script runs) and played into a terminal emulator of the page's size.
Needs Debian's chromium and chromium-driver (`.ci/run` installs them); skipped, saying
so, where they are missing.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from urllib.parse import parse_qs, urlparse

import pytest

from tests.limits import limit

pytestmark = pytest.mark.slow

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
WAIT = limit(90.0)  # seconds for the first screen (a fresh app imports torch)
HOOK = """
(() => {
  const Native = window.WebSocket;
  window.__bytes = [];
  window.__url = null;
  window.WebSocket = function (url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    window.__url = url;
    socket.addEventListener("message", (event) => {
      if (typeof event.data !== "string") { window.__bytes.push(...new Uint8Array(event.data)); }
    });
    return socket;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, Native);
})();
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def server(tmp_path) -> Iterator[str]:
    pytest.importorskip("textual_serve", reason="textual-serve is not installed: pip install 'attn-tui[web]'")
    port = free_port()
    env = {**os.environ, "ATTN_TUI_LANG": "en"}
    process = subprocess.Popen([sys.executable, "-m", "attn_tui", "serve", "--port", str(port)], cwd=tmp_path,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, start_new_session=True)
    try:
        yield served_url(process, port)
    finally:
        os.killpg(process.pid, signal.SIGTERM)  # the server and the apps it started for the page
        try:
            process.wait(timeout=limit(15))
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=limit(15))
        if process.stderr is not None:
            process.stderr.close()


def served_url(process: subprocess.Popen, port: int) -> str:
    """The URL serve printed (it carries the run's token), once serve listens on `port`."""
    assert process.stderr is not None
    url = ""
    while not url:
        line = process.stderr.readline()
        line = line.decode() if isinstance(line, bytes) else line
        assert line, "serve ended before it printed its address"
        if "serving attn-tui on " in line:
            url = line.split("serving attn-tui on ", 1)[1].split()[0]
    deadline = time.monotonic() + limit(30)
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return url
        assert process.poll() is None
        time.sleep(0.2)
    pytest.fail("the server never listened")


@pytest.fixture
def browser():
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("the browser test needs Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1400,900"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": HOOK})
    try:
        yield driver
    finally:
        driver.quit()


class Screen:
    """The page's terminal, replayed from the bytes it received."""

    def __init__(self, driver) -> None:
        self.driver = driver

    def lines(self) -> list[str]:
        import pyte

        url = self.driver.execute_script("return window.__url")
        if not url:
            return []
        query = parse_qs(urlparse(url).query)
        screen = pyte.Screen(int(query["width"][0]), int(query["height"][0]))
        stream = pyte.ByteStream(screen)
        stream.feed(bytes(self.driver.execute_script("return window.__bytes")))
        return [line.rstrip() for line in screen.display]

    def wait_for(self, *texts: str) -> list[str]:
        deadline = time.monotonic() + WAIT
        lines: list[str] = []
        while time.monotonic() < deadline:
            lines = self.lines()
            shown = "\n".join(lines)
            if all(text in shown for text in texts):
                return lines
            time.sleep(0.5)
        raise AssertionError(f"{texts} never appeared; the screen was:\n" + "\n".join(lines))


def painted_pixels(driver) -> int:
    """Pixels the terminal's text canvas has drawn on (0 for a blank page)."""
    return int(driver.execute_script("""
        const canvas = document.querySelector('canvas.xterm-text-layer');
        if (!canvas) { return 0; }
        const data = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 3; i < data.length; i += 4) { if (data[i] > 0) { n++; } }
        return n;
    """))


def test_the_app_runs_in_a_browser_and_follows_keys(server: str, browser) -> None:
    pytest.importorskip("pyte", reason="pyte is not installed (the test extra has it)")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get(server)
    screen = Screen(browser)
    lines = screen.wait_for("나는", "X = Embedding(tokens)")  # a token and the first stage's formula
    assert painted_pixels(browser) > 2000, "the page is blank"
    origin = server.split("/?", 1)[0]
    fetched = browser.execute_script("return performance.getEntriesByType('resource').map(e => e.name)")
    assert fetched and all(name.startswith(origin + "/") for name in fetched), fetched  # no web-font host
    assert any("8·weights" in line for line in lines)
    keyboard = browser.find_element(By.CSS_SELECTOR, "textarea.xterm-helper-textarea")  # where the page takes keys
    keyboard.send_keys("8")
    screen.wait_for("A = softmax(M) over keys")
    keyboard.send_keys(Keys.END)
    lines = screen.wait_for("O = A·V")  # the last stage's formula
    keyboard.send_keys(Keys.HOME)
    lines = screen.wait_for("X = Embedding(tokens)")
    assert any("학교에" in line for line in lines)


def test_a_host_beyond_loopback_is_warned_about(tmp_path) -> None:
    pytest.importorskip("textual_serve")
    from attn_tui.cli.serve import is_loopback

    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.5")
    from attn_tui.cli.serve import dotted_quad

    for legacy in ("127.1", "0x7f.1", "2130706433", "0177.0.0.1", "0x7f000001"):
        assert dotted_quad(legacy) == "127.0.0.1", legacy  # what a browser sends as Host for that URL
    for other in ("localhost", "::1", "127.0.0.1 x", "1.2.3.4.5", "example.org", "[::1]"):
        assert dotted_quad(other) == other, other
    port = free_port()
    process = subprocess.Popen([sys.executable, "-m", "attn_tui", "serve", "--host", "0.0.0.0", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True,
                               env={**os.environ, "ATTN_TUI_LANG": "en"}, cwd=tmp_path)
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert first.startswith("warning: serving on 0.0.0.0: anyone who can reach this address")
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=limit(15))
        process.stderr.close()


def test_a_port_in_use_is_one_line() -> None:
    pytest.importorskip("textual_serve")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run([sys.executable, "-m", "attn_tui", "serve", "--port", str(port)], capture_output=True,
                                text=True, timeout=limit(60), env={**os.environ, "ATTN_TUI_LANG": "en"})
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1].startswith("attn-tui: error: ") and "address already in use" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("options,fragment", [
    (("--max-sessions", "0"), "--max-sessions"), (("--max-sessions", "65"), "between"),
    (("--idle-minutes", "0"), "--idle-minutes"), (("--idle-minutes", "nan"), "--idle-minutes"),
    (("--export-dir", "no-such-parent/exports"), "no directory"), (("--export-dir", "/dev/null"), "need a folder"),
    (("--public-url", "javascript:alert(1)"), "--public-url"), (("--public-url", "http://x:port"), "--public-url"),
    (("--public-url", "https://"), "--public-url"), (("--public-url", "http://x/?a=1"), "--public-url"),
    (("--export-dir", " "), "--export-dir is empty"), (("--export-dir", "nope/\x1b]2;x\x07"), "no directory"),
])
def test_a_bad_serve_option_is_one_line(tmp_path, options: tuple[str, ...], fragment: str) -> None:
    pytest.importorskip("textual_serve")
    result = subprocess.run([sys.executable, "-m", "attn_tui", "serve", "--port", str(free_port()), *options],
                            capture_output=True, text=True, timeout=limit(60), cwd=tmp_path,
                            env={**os.environ, "ATTN_TUI_LANG": "en"})
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("attn-tui") and fragment in result.stderr and "Traceback" not in result.stderr
    assert "\x1b" not in result.stderr and not (tmp_path / "attn-tui-exports").exists()
