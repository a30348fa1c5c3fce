"""A checkbox and a radio button whose state reads in its shape, `[x]`/`[ ]` and `(•)`/`( )`, not only in colour."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox, RadioButton

ON, OFF = "x", " "  # inside the brackets: the same in every language and on a terminal without colour
RADIO_ON = "•"  # inside a radio button's parentheses


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


class ShapeRadioButton(RadioButton):
    """Textual's radio button draws `▐●▌` on and off alike, told apart by colour alone: `(•)` and `( )` read by
    their shape, as ShapeCheckbox does for a checkbox."""

    DEFAULT_CSS = """
    ShapeRadioButton > .toggle--button { color: $text-muted; background: transparent; }
    ShapeRadioButton.-on > .toggle--button { color: $text-success; background: transparent; text-style: bold; }
    """

    BUTTON_LEFT = "("
    BUTTON_RIGHT = ")"

    @property
    def _button(self) -> Content:
        style = self.get_visual_style("toggle--button")
        return Content.assemble((self.BUTTON_LEFT, style), (RADIO_ON if self.value else OFF, style),
                                (self.BUTTON_RIGHT, style), " ")  # the label's own padding is gone in a RadioSet
