"""Textual's footer, with every key's description in the language on show."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Footer
from textual.widgets._footer import FooterKey, FooterLabel

from attn_tui.i18n import _


class LocalFooter(Footer):
    """Descriptions are English msgids (tui/bindings.py); they are translated as the footer composes,
    and `t` recomposes it."""

    def compose(self) -> ComposeResult:
        for widget in super().compose():
            if isinstance(widget, FooterKey):
                widget.description = _(widget.description) if widget.description else ""
                if widget.tooltip:
                    widget.tooltip = _(str(widget.tooltip))
            elif isinstance(widget, FooterLabel):
                widget.update(_(str(widget.content)))
            yield widget
