"""The stage bar: the variant's stages as a breadcrumb, then the formula and shape of the current one."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class StageBar(Static):
    """Breadcrumb (digits jump to a stage), current stage highlighted, formula and shape below."""

    def show(self, names: list[str], current: int, formula: str, shape: str, note: str,
             head: str = "", origin: str | None = None) -> None:
        text = Text()
        for n, name in enumerate(names):
            if n:
                text.append(" › ", "dim")
            style = "bold black on yellow" if n == current else ""
            if n < 10:  # digits 1…9, 0 jump here; no space, so a label never wraps in two
                text.append(f"{(n + 1) % 10}·", style or "dim")
            text.append(name, style)
        text.append("\n")
        text.append(formula, "bold cyan")
        text.append("\n")
        text.append(f"shape {shape}", "dim")
        if head:
            text.append(f"   {head}", "magenta")
        if note:
            text.append(f"   {note}", "green")
        if origin:  # a recorded stage: the line of the user's code that made it
            text.append("\n")
            text.append(made_by(origin), "italic")
        self.update(text)


def made_by(origin: str) -> str:
    """'made by attn.py:31: scores = …' in the language on show."""
    from attn_tui.i18n import Msg

    return str(Msg("made by {origin}", origin=origin))
