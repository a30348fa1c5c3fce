"""A checkbox and a radio button whose state reads in its shape, `[x]`/`[ ]` and `(•)`/`( )`, not only in colour."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Checkbox, RadioButton

ON, OFF = "x", " "  # inside the brackets: the same in every language and on a terminal without colour
RADIO_ON = "•"  # inside a radio button's parentheses


def _css(name: str) -> str:
    """Muted when off, bold green when on: the colour adds to the shape, never stands alone."""
    return (f"{name} > .toggle--button {{ color: $text-muted; background: transparent; }}\n"
            f"{name}.-on > .toggle--button {{ color: $text-success; background: transparent; text-style: bold; }}")


def _shaped(toggle: Checkbox | RadioButton, on: str) -> Content:
    """The button as `left mark right ` (compact mode and a RadioSet both drop the label's own padding)."""
    style = toggle.get_visual_style("toggle--button")
    return Content.assemble((toggle.BUTTON_LEFT, style), (on if toggle.value else OFF, style),
                            (toggle.BUTTON_RIGHT, style), " ")


class ShapeCheckbox(Checkbox):
    """Textual's checkbox draws the same `X` on and off and tells them apart by colour alone, which a
    colour-blind reader, a monochrome terminal or a screenshot in print loses."""

    DEFAULT_CSS = _css("ShapeCheckbox")
    BUTTON_LEFT = "["
    BUTTON_RIGHT = "]"

    @property
    def _button(self) -> Content:
        return _shaped(self, ON)


class ShapeRadioButton(RadioButton):
    """Textual's radio button draws `▐●▌` on and off alike, told apart by colour alone: `(•)` and `( )` read by
    their shape, as ShapeCheckbox does for a checkbox."""

    DEFAULT_CSS = _css("ShapeRadioButton")
    BUTTON_LEFT = "("
    BUTTON_RIGHT = ")"

    @property
    def _button(self) -> Content:
        return _shaped(self, RADIO_ON)
