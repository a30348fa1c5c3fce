"""The app's own screen: the panes, styled once at start-up."""

from __future__ import annotations

from typing import Any

from textual import events
from textual.screen import Screen


class MainScreen(Screen[Any]):
    """The default screen, which AttnApp composes into.

    Textual restyles a screen and every widget on it each time the screen is shown, to catch
    theme or CSS changes made while it was covered. The first time, there were none: each
    widget was styled as it mounted, moments before. Skipping that pass saves a whole restyle of
    some two hundred widgets, about a tenth of the time to the first frame, on the way to the
    first heatmap. Later showings (after help, a dialog) restyle as usual.
    """

    _shown_before = False

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        # Runs before Screen's own handler (Textual dispatches from the subclass up), so it can ask it not to.
        if not self._shown_before:
            self._shown_before = True
            event.refresh_styles = False
