"""The app's language key: `t` switches English ↔ 한국어, and every pane reads its words again in the new one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.widgets import Static

from attn_tui import i18n
from attn_tui.tui.actions import NavigationActions
from attn_tui.tui.widgets.footer import LocalFooter
from attn_tui.tui.widgets.input_pane import InputPane
from attn_tui.tui.widgets.model_pane import ModelPane

if TYPE_CHECKING:
    from attn_tui.tui.state import AppState


class LanguageActions(NavigationActions):
    """`t`, and what follows a change of `language` (the app's reactive): panes, footer and error line relabelled."""

    language: str
    state: AppState

    if TYPE_CHECKING:  # what AttnApp provides
        @property
        def error(self) -> str: ...

        @staticmethod
        def _too_small_text() -> str: ...

        def save_soon(self) -> None: ...

    def action_toggle_language(self) -> None:
        self.language = "ko" if self.language == "en" else "en"

    def watch_language(self, language: str) -> None:
        i18n.set_language(language)
        self.query_one(ModelPane).relabel()
        self.query_one(InputPane).relabel()
        if self.shown is not None and self.state.on_record:
            self.query_one(InputPane).show_model_tokens(self.shown.trace)  # relabel drew the variants' tokens
        self.query_one(LocalFooter).refresh(recompose=True)
        self.query_one("#too-small", Static).update(self._too_small_text())
        self.explorer.language = language
        self.explorer.show_error(self.error)
        self.save_soon()
