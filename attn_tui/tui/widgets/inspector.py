"""The inspector: the arithmetic of the cell under the cursor at the current stage (and at B, comparing)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

from attn_tui.i18n import _

if TYPE_CHECKING:
    from attn_tui.explain.cell import Arithmetic


def arithmetic_text(arithmetic: Arithmetic, heading: str = "") -> Text:
    """An `Arithmetic` (from attn_tui.explain.cell) as lines, and whether it matches the stage's own value."""
    text = Text()
    if heading:
        text.append(heading + "\n", "bold magenta")
    text.append(arithmetic.title, "bold cyan")
    for line in arithmetic.lines:
        text.append("\n" + line)
    text.append("\n" + _("stage value {value}").format(value=f"{arithmetic.expected:.6g}"), "dim")
    matches = arithmetic.matches
    text.append("  " + (_("✓ matches") if matches else _("✗ recomputed {value}").format(
        value=f"{arithmetic.total:.6g}")), "green" if matches else "red")
    return text


class Inspector(Static):
    """The cell (its place and whole token names), then one or two arithmetics."""

    DEFAULT_CSS = """
    Inspector { height: auto; }
    """

    def show(self, where: str, arithmetic: Arithmetic, other: tuple[str, str, Arithmetic] | None = None,
             origin: str = "", whose: str = "") -> None:
        """`other` (A's heading, B's heading, B's arithmetic) when comparing: A's lines, then B's, then B − A;
        `whose`: the layer, head and step the cell belongs to, named first so the arithmetic is never anonymous."""
        text = Text()
        text.append(_("Cell") + " ", "bold")
        if whose:
            text.append(whose + " · ", "bold magenta")
        text.append(where, "bold yellow")
        if origin:  # a recorded stage: the user's line that made it
            from attn_tui.tui.widgets.stage_bar import made_by

            text.append("\n" + made_by(origin), "italic")
        text.append("\n")
        if other is None:
            text.append_text(arithmetic_text(arithmetic))
        else:
            a_heading, b_heading, b = other
            text.append_text(arithmetic_text(arithmetic, a_heading))
            text.append("\n")
            text.append_text(arithmetic_text(b, b_heading))
            text.append("\n" + _("B − A = {value}").format(value=f"{b.expected - arithmetic.expected:.6g}"),
                        "bold yellow")
        self._update_in_place(text)

    def _update_in_place(self, text: Text) -> None:
        """New text, and a layout of the screen only when the inspector's height changes with it.

        A cursor move changes the numbers, rarely the number of lines; a layout pass re-arranges every
        widget on the screen, which a key need not pay for when no size changed.
        """
        self.update(text, layout=False)
        width, height = self.content_size
        if not width or self.get_content_height(self.content_size, self.app.size, width) != height:
            self.refresh(layout=True)
