"""The stage bar: the pipeline's stages as a breadcrumb (click, a digit or `/` jumps), then the formula and shape."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widgets import Static

from attn_tui.i18n import _


class StageBar(Static):
    """Breadcrumb (digits and clicks jump to a stage), current stage highlighted, formula and shape below."""

    def show(self, titles: list[str], current: int, formula: str, shape: str, note: str, place: str = "",
             origin: str = "", settings: str = "", more: bool = False) -> None:
        """`settings`: the settings that differ from the defaults; `more`: the trace has places the digits do not
        reach (past the tenth, or at other steps and tiles)."""
        text = Text()
        for n, title in enumerate(titles):
            if n:
                text.append(" › ", "dim")
            click = Style.from_meta({"@click": f"app.stage({n})"})
            style = Style.parse("bold black on yellow") if n == current else Style()
            # counted 1, 2, … 10, 11 (never `0·`, which reads as a 0-based stage); no space, so a label never wraps
            text.append(f"{n + 1}·", (style if n == current else Style(dim=True)) + click)
            text.append(title, style + click)
        if len(titles) >= 10:  # the tenth's digit is 0: say so, since the bar numbers it 10
            text.append("   " + _("key 0 = stage 10"), "dim italic")
        if more:  # the digits stop at the tenth, and at this step: say what reaches the rest
            text.append("   " + _("/ picks any stage"), "dim italic")
        text.append("\n")
        text.append(formula, "bold cyan")
        text.append("\n")
        text.append(_("shape {shape}").format(shape=shape), "dim")
        if place:
            text.append(f"   {place}", "magenta")
        if note:
            text.append(f"   {note}", "green")
        if settings:  # what besides the input shapes these numbers: never to be missed after another exercise
            text.append("\n" + settings, "yellow")
        if origin:  # a recorded stage: the line of the user's code that made it
            text.append("\n" + made_by(origin), "italic")
        self.update(text)


def made_by(origin: str) -> str:
    """'made by attn.py:31: scores = …' in the language on show."""
    from attn_tui.i18n import Msg

    return str(Msg("made by {origin}", origin=origin))
