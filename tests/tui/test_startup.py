"""The first screen must not wait for torch: the app's modules import without it, and it says it is loading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from attn_tui.core.settings import SentenceInput
from attn_tui.tui.app import AttnApp
from attn_tui.tui.messages import SourceEdited
from attn_tui.tui.widgets.heatmap import Heatmap
from tests.tui.helpers import sample_app

ROOT = Path(__file__).resolve().parents[2]


def test_the_app_modules_do_not_import_torch() -> None:
    code = ("import sys, attn_tui.tui.app, attn_tui.tui.commands, attn_tui.cli; "
            "assert 'torch' not in sys.modules, 'torch imported at module level'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


class _NoTorchYet(AttnApp):
    """The app with torch still loading for as long as the test wants."""

    def _load_torch(self) -> None:
        return None


async def test_first_screen_shows_loading_and_takes_edits_before_torch() -> None:
    app = _NoTorchYet(sample_app().variants)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        assert "loading torch" in app.query_one(Heatmap).message
        assert "loading torch" in str(app.query_one("#stage-bar").render())
        app.post_message(SourceEdited(SentenceInput("a b")))
        await pilot.pause()
        assert app.generation == 0 and app.variants.source == SentenceInput("a b")  # kept for later
