"""The screen saved as SVG from the app: re-set for browsers (render/svg.py), and a full disk keeps the old file."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from attn_tui.tui.screens.export import ExportAsk
from tests.tui.helpers import sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]


async def _save_screen(path: Path):
    app = sample_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.exporting.export(ExportAsk("screen", "svg", path))
        await pilot.pause()
        await pilot.pause()
    return app


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder of its own for the screenshot (tmp_path holds the test's state directory too)."""
    (tmp_path / "out").mkdir()
    return tmp_path / "out"


async def test_the_screen_is_saved_with_every_character_in_its_cells(folder: Path) -> None:
    app = await _save_screen(folder / "screen.svg")
    svg = (folder / "screen.svg").read_text(encoding="utf-8")
    assert 'lengthAdjust="spacingAndGlyphs"' in svg and "Noto Sans Mono CJK KR" in svg  # the Korean tokens
    assert any("saved the screen to" in n.message for n in app.notices)
    assert sorted(p.name for p in folder.iterdir()) == ["screen.svg"]


async def test_a_full_disk_keeps_the_screenshot_that_was_there(folder: Path, monkeypatch) -> None:
    target = folder / "screen.svg"
    target.write_text("the old screenshot\n")
    real = Path.write_text

    def fills_up(self: Path, text: str, *args, **kwargs) -> int:
        real(self, text[:1000], *args, **kwargs)  # some of it reached the disk, then the disk was full
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Path, "write_text", fills_up)
    app = await _save_screen(target)
    monkeypatch.undo()
    failed = [n for n in app.notices if n.severity == "error"]
    assert len(failed) == 1
    assert "cannot write the screenshot" in failed[0].message and "No space left on device" in failed[0].message
    assert target.read_text() == "the old screenshot\n"
    assert sorted(p.name for p in folder.iterdir()) == ["screen.svg"]
