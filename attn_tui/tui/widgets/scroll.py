"""A scrolling box that is not a Tab stop and leaves the arrow keys to the app."""

from __future__ import annotations

from textual.containers import VerticalScroll


class QuietScroll(VerticalScroll, can_focus=False, inherit_bindings=False):
    """Scrolls with the mouse wheel; the keyboard keeps its app-wide meanings."""
