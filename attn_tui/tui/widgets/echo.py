"""Text inputs that echo what was typed or pasted as visible symbols, never as terminal escapes; `shown` for labels.

Textual draws an Input's value and a TextArea's lines as they are: a pasted `ESC ] 52 ; c ; … BEL`
would reach the terminal and write the user's clipboard, `ESC ] 2 ; …` would retitle it (Rich drops
BEL and CR, not ESC). These draw `printable(text)` instead; the value itself stays exactly as typed
(what the parser, the session and undo see). `printable` maps one character to one, so the
cursor and selection offsets Textual keeps still index the drawn text.
"""

from __future__ import annotations

from rich.cells import cell_len, get_character_cell_size
from rich.text import Text
from textual.widgets import Input, TextArea

from attn_tui.present.text import printable


def shown(text: str | Text, style: str = "") -> Text:
    """A label's text made printable, its styles kept (`printable` maps one character to one)."""
    if isinstance(text, str):
        return Text(printable(text), style=style)
    drawn = text.copy()
    drawn.plain = printable(text.plain)
    return drawn


class EchoInput(Input):
    """An Input whose value is drawn through `printable`, and measured as drawn.

    ESC and the bidi marks take no cell in the value but one as a symbol: the cursor's cell, the
    scrolling and a click's position are measured on the drawn text (Input's three places that
    measure), so the cursor stays on the character it is at.
    """

    @property
    def _value(self) -> Text:  # Textual's own hook for the drawn value (Input._value); the same, made printable
        if self.password:
            return super()._value
        text = Text(printable(self.value), no_wrap=True, overflow="ignore", end="")
        return self.highlighter(text) if self.highlighter is not None else text

    def _position_to_cell(self, position: int) -> int:
        return cell_len(printable(self.value[:position]))  # a tab is drawn ␉, one cell

    def _cell_offset_to_index(self, offset: int) -> int:
        cell_offset, target = 0, offset + self.scroll_offset.x
        for index, char in enumerate(printable(self.value)):
            width = get_character_cell_size(char)
            if cell_offset <= target < cell_offset + width:
                return index
            cell_offset += width
        return max(0, min(target, len(self.value)))


class EchoTextArea(TextArea):
    """A TextArea whose lines are drawn through `printable` (TextArea.get_line is the documented hook)."""

    def get_line(self, line_index: int) -> Text:
        return Text(printable(self.document.get_line(line_index)), end="", no_wrap=True)
