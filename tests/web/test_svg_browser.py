"""The app's SVG screenshot of a Korean screen, drawn by headless Chromium, puts each glyph in the terminal's cells.

The terminal is pyte, fed the very frame the screenshot was taken from; Chromium reports
where it drew each character (`getExtentOfChar`). Every glyph must start at its cell's
left edge and end within its cells (a Hangul syllable fills its two, as the terminal
draws it), and every character the terminal shows must be drawn. Rich's own SVG fails this
for Korean (a Hangul run's length counts characters, not cells). Needs Debian's chromium
and chromium-driver and selenium (the test extra); skipped, saying so, where missing.
"""

from __future__ import annotations

import io
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from attn_tui.tui.screens.export import ExportAsk
from tests.tui.helpers import sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
DRIVER = shutil.which("chromedriver")
SIZE = (130, 40)
TOLERANCE = 0.6  # px: Chromium's layout rounds to 1/64 px; Rich writes coordinates to 6 digits
MEASURE = """
const out = [];
for (const text of document.querySelectorAll("svg g text[clip-path]")) {
  const y = parseFloat(text.getAttribute("y"));
  for (let i = 0; i < text.getNumberOfChars(); i++) {
    const box = text.getExtentOfChar(i);
    out.push([text.textContent[i], y, box.x, box.width]);
  }
}
return out;
"""


@pytest.fixture
def browser() -> Iterator[Any]:
    if CHROMIUM is None or DRIVER is None:
        pytest.skip("the browser test needs Debian's chromium and chromium-driver "
                    "(apt-get install chromium chromium-driver; .ci/run installs them)")
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the test extra has it)")
    pytest.importorskip("pyte", reason="pyte is not installed (the test extra has it)")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=1700,1100"):
        options.add_argument(argument)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def terminal(frame: str, width: int, height: int) -> dict[tuple[int, int], str]:
    """(row, column) → what a terminal holds there after `frame`, blank cells and a wide glyph's right half left out."""
    import pyte

    screen = pyte.Screen(width, height)
    pyte.Stream(screen).feed(frame)
    return {(row, column): char.data for row, line in screen.buffer.items() for column, char in line.items()
            if char.data.strip()}


def geometry(svg: str) -> tuple[float, float, float]:
    """Rich's cell width, line height and the first line's baseline, from the SVG it wrote."""
    size = float(re.search(r"-matrix \{\s*font-family:[^;]*;\s*font-size: ([\d.]+)px", svg)[1])  # type: ignore[index]
    return size * 0.61, size * 1.22, size  # Rich's defaults: font_aspect_ratio 0.61, line height 1.22


def glyph_problems(glyphs: list[list], cells: dict[tuple[int, int], str], svg: str) -> list[str]:
    """Where the drawn glyphs differ from the terminal's cells, in words (empty: none)."""
    from rich.cells import cell_len

    char_width, line_height, baseline = geometry(svg)
    problems, drawn, ends = [], set(), {}
    for char, y, x, width in sorted(glyphs, key=lambda g: (g[1], g[2])):
        if not char.strip():
            continue
        row, column = round((y - baseline) / line_height), round(x / char_width)
        cells_wide = cell_len(char)
        if cells.get((row, column)) != char:
            problems.append(f"{char!r} drawn at row {row} column {column}, the terminal has "
                            f"{cells.get((row, column))!r}")
        start, end = column * char_width, (column + cells_wide) * char_width
        short = cells_wide == 2 and x + width < end - TOLERANCE  # a syllable fills both its cells
        if abs(x - start) > TOLERANCE or x + width > end + TOLERANCE or short:
            problems.append(f"{char!r} at row {row} column {column} spans {x:.1f}..{x + width:.1f} px, its cells "
                            f"{start:.1f}..{end:.1f}")
        if ends.get(row, 0.0) > x + TOLERANCE:
            problems.append(f"{char!r} at row {row} column {column} overlaps the glyph before it")
        ends[row] = x + width
        drawn.add((row, column))
    problems += [f"{cells[place]!r} at {place} is not drawn" for place in sorted(set(cells) - drawn)]
    return problems


async def korean_screen(path: Path) -> tuple[str, str]:
    """The Korean screen saved as SVG the way `e` → screen saves it, and the terminal frame it shows."""
    from rich.console import Console

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("t")
        await settle(pilot)
        app.exporting.export(ExportAsk("screen", "svg", path))
        await pilot.pause()
        await pilot.pause()
        console = Console(width=SIZE[0], height=SIZE[1], file=io.StringIO(), force_terminal=True,
                          color_system="truecolor", legacy_windows=False, safe_box=False)
        console.print(app.screen._compositor.render_update(full=True))  # what export_screenshot draws from
        frame = console.file.getvalue()  # type: ignore[attr-defined]
    assert not [n for n in app.notices if n.severity == "error"], app.notices
    return path.read_text(encoding="utf-8"), frame


async def test_a_korean_screenshot_keeps_every_glyph_in_its_cells(browser, tmp_path: Path) -> None:
    svg, frame = await korean_screen(tmp_path / "screen.svg")
    cells = terminal(frame, *SIZE)
    assert sum(1 for c in cells.values() if re.match(r"[가-힣]", c)) > 100  # a Korean screen indeed
    page = tmp_path / "page.html"
    page.write_text(f"<!DOCTYPE html><html><body style='margin:0'>{svg}</body></html>", encoding="utf-8")
    browser.get(page.as_uri())
    browser.execute_async_script("document.fonts.ready.then(arguments[arguments.length - 1])")
    glyphs = browser.execute_script(MEASURE)
    assert len(glyphs) > 500
    assert glyph_problems(glyphs, cells, svg) == []
