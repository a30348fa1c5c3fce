"""The stage bar: the pipeline's stages as a breadcrumb (click, a digit or `/` jumps), then the formula and shape."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual.content import Content
from textual.widgets import Static

from attn_tui.i18n import _


@dataclass(frozen=True)
class BarContent:
    """What the bar shows: kept, so a new width draws it again (where the hints fit depends on it)."""

    titles: tuple[str, ...]
    current: int
    formula: str
    shape: str
    note: str
    place: str
    origin: str
    settings: str
    more: bool
    lesson: str


class StageBar(Static):
    """Breadcrumb (digits and clicks jump to a stage), current stage highlighted, formula and shape below."""

    showing: BarContent | None = None

    def show(self, titles: list[str], current: int, formula: str, shape: str, note: str, place: str = "",
             origin: str = "", settings: str = "", more: bool = False, lesson: str = "") -> None:
        """`settings`: the settings that differ from the defaults; `more`: the trace has places the digits do not
        reach (past the tenth, or at other steps and tiles); `lesson`: the sample's own words on what of its note
        carries over."""
        self.showing = BarContent(tuple(titles), current, formula, shape, note, place, origin, settings, more, lesson)
        self.draw(self.showing)

    def draw(self, bar: BarContent) -> None:
        text = Text()
        for n, title in enumerate(bar.titles):
            if n:
                text.append(" › ", "dim")
            click = Style.from_meta({"@click": f"app.stage({n})"})
            style = Style.parse("bold black on yellow") if n == bar.current else Style()
            # counted 1, 2, … 10, 11 (never `0·`, which reads as a 0-based stage); no space, so a label never wraps
            text.append(f"{n + 1}·", (style if n == bar.current else Style(dim=True)) + click)
            text.append(title, style + click)
        hints = [*([_("press 0 for stage 10")] if len(bar.titles) >= 10 else []),  # the bar numbers the tenth 10
                 *([_("press / for any stage")] if bar.more else [])]  # the digits stop at the tenth, and here
        if hints:
            said = "   ".join(hints)
            width = self.content_region.width or self.app.size.width
            laid_out = Content.from_rich_text(text).wrap(max(width, 1))  # as the bar will lay the stages out
            # A hint never wraps in two: where it does not fit beside the stages it takes a line of its own.
            fits = (laid_out[-1].cell_length if laid_out else 0) + 3 + cell_len(said) <= width
            text.append(("   " if fits else "\n") + said, "dim italic")
        text.append("\n")
        text.append(bar.formula, "bold cyan")
        if bar.shape:  # a panel of the whole model has no stage's shape to give
            text.append("\n")
            text.append(_("shape {shape}").format(shape=bar.shape), "dim")
        if bar.place:
            text.append(f"   {bar.place}", "magenta")
        if bar.note:
            text.append(f"   {bar.note}", "green")
        if bar.settings:  # what besides the input shapes these numbers: never to be missed after another exercise
            text.append("\n" + bar.settings, "yellow")
        if bar.origin:  # a recorded stage: the line of the user's code that made it
            text.append("\n" + made_by(bar.origin), "italic")
        if bar.lesson:
            text.append("\n" + bar.lesson, "dim italic")
        self.update(text)

    def on_resize(self) -> None:
        if self.showing is not None:
            self.draw(self.showing)


def made_by(origin: str) -> str:
    """'made by attn.py:31: scores = …' in the language on show."""
    from attn_tui.i18n import Msg

    return str(Msg("made by {origin}", origin=origin))
