"""The explanation panel: what the current stage does and why, in the language on show."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from attn_tui.i18n import _
from attn_tui.present.explanations import explanation


class Explanation(Static):
    """Two or three sentences for the stage; `t` switches the language."""

    def show(self, stage: str, keys: tuple[str, ...]) -> None:
        text = Text()
        text.append(_("Why") + " ", "bold")
        text.append(stage, "bold yellow")
        text.append("  " + _("(t: 한국어)"), "dim")
        text.append("\n" + explanation(stage, keys))
        self.update(text)
