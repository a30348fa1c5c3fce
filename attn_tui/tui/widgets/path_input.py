"""The model pane's path field: a folder path completed like a shell (→ or Tab takes the suggestion)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import ClassVar

from textual.binding import Binding, BindingType
from textual.suggester import Suggester

from attn_tui.i18n import N_, _
from attn_tui.tui.path_completion import Completion, complete
from attn_tui.tui.widgets.echo import EchoInput

LISTING_TIMEOUT = 2.0  # seconds a directory listing may take before the suggestion is given up

OnCompleted = Callable[[str, Completion], None]


class PathSuggester(Suggester):
    """Textual's own completion hook, fed from a bounded listing read in a thread (a slow or network disk must not
    hold the event loop). Not cached: a folder made since is offered next time. `on_completed` hears every
    value's completion, so the pane can say when it names a model folder."""

    def __init__(self, on_completed: OnCompleted | None = None) -> None:
        super().__init__(use_cache=False, case_sensitive=True)  # paths are case-sensitive
        self.on_completed = on_completed

    async def get_suggestion(self, value: str) -> str | None:
        try:
            found = await asyncio.wait_for(asyncio.to_thread(complete, value), LISTING_TIMEOUT)
        except (TimeoutError, OSError):
            found = Completion(None, False)
        if self.on_completed is not None:
            self.on_completed(value, found)
        return found.suggestion


class PathInput(EchoInput):
    """An echoing input whose suggestion Tab takes too, as a shell's; with no suggestion Tab moves focus as always."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("tab", "accept_suggestion", N_("Complete the path"), show=False, id="path.complete"),
    ]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "accept_suggestion":
            return bool(self._suggestion) and self.cursor_at_end  # else the key falls through: focus moves on
        return super().check_action(action, parameters)

    def action_accept_suggestion(self) -> None:
        """Tab: take the suggestion (what → at the end does)."""
        self.value = self._suggestion
        self.cursor_position = len(self.value)


def model_hint(model: bool) -> str:
    """The line under the path field: a folder that holds a config.json is marked as a model."""
    return _("▸ a model folder") if model else ""
