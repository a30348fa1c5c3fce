"""Textual's footer, with every key's description in the language on show."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel

from attn_tui.i18n import _, language


class LocalFooter(Footer):
    """Descriptions are English msgids (tui/bindings.py); they are translated as the footer composes,
    and `t` recomposes it.

    Textual recomposes its footer on every change of focus, each time restyling a dozen keys; this one
    recomposes only when the keys it shows would differ, once per refresh."""

    _shown: Any = None  # what the last compose showed: the keys, their state, the language
    _pending = False  # a recompose is scheduled for after the next refresh

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self._bindings_ready = True
        if not screen.app.app_focus or self._pending or not self.is_attached or screen is not self.screen:
            return
        self._pending = True
        self.call_after_refresh(self._recompose_if_changed)

    async def _recompose_if_changed(self) -> None:
        self._pending = False
        if self.is_attached and self._keys() != self._shown:
            await self.recompose()

    def _keys(self) -> Any:
        active = self.screen.active_bindings
        shown = tuple((b.key, b.description, on, tip) for _node, b, on, tip in active.values() if b.show)
        return language(), self.show_command_palette, shown

    def compose(self) -> ComposeResult:
        if self._bindings_ready:
            self._shown = self._keys()
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                widget.description = _(widget.description) if widget.description else ""
                if widget.tooltip:
                    widget.tooltip = _(str(widget.tooltip))
            elif isinstance(widget, FooterLabel):
                widget.update(_(str(widget.content)))
            yield widget
