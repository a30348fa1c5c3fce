"""A checkbox whose state reads in its shape, `[x]` or `[ ]`, not only in its colour."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox

ON, OFF = "x", " "  # inside the brackets: the same in every language and on a terminal without colour


class ShapeCheckbox(Checkbox):
    """Textual's checkbox draws the same `X` on and off and tells them apart by colour alone, which a
    colour-blind reader, a monochrome terminal or a screenshot in print loses."""

    DEFAULT_CSS = """
    ShapeCheckbox > .toggle--button { color: $text-muted; background: transparent; }
    ShapeCheckbox.-on > .toggle--button { color: $text-success; background: transparent; text-style: bold; }
    """

    BUTTON_LEFT = "["
    BUTTON_RIGHT = "]"

    @property
    def _button(self) -> Content:
        style = self.get_visual_style("toggle--button")
        return Content.assemble((self.BUTTON_LEFT, style), (ON if self.value else OFF, style),
                                (self.BUTTON_RIGHT, style), " ")  # compact mode drops the label's padding
