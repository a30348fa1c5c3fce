"""The first screen must not wait for torch: the app's modules import without it, and it says it is loading."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attn_tui.ask.settings import SentenceInput
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
        assert app.state.generation == 0 and app.variants.source == SentenceInput("a b")  # kept for later


@pytest.mark.slow
async def test_the_screen_is_styled_once_at_start_and_again_when_textual_asks(monkeypatch) -> None:
    """Each widget is styled as it mounts; the whole-screen restyle Textual asks for on a screen's showing is
    skipped the first time (nothing could have changed since), and done when it asks again."""
    from textual import events
    from textual.screen import Screen

    from attn_tui.tui.screens.main import MainScreen

    restyled: list[Screen] = []
    whole = Screen.update_node_styles

    def counted(self: Screen, animate: bool = True) -> None:
        restyled.append(self)
        whole(self, animate)

    monkeypatch.setattr(Screen, "update_node_styles", counted)
    app = _NoTorchYet(sample_app().variants)
    async with app.run_test(size=(100, 32)) as pilot:
        await pilot.pause()
        main = app.screen
        assert isinstance(main, MainScreen) and main not in restyled
        assert app.query_one("#model").styles.display == "block"  # styled all the same
        main.post_message(events.ScreenResume())  # as Textual sends it when the screen comes back with new styles
        await pilot.pause()
        assert restyled == [main]
