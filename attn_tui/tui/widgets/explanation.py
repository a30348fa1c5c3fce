"""The explanation panel: what the current stage does and why, in the language on show."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from attn_tui.i18n import _
from attn_tui.present.explanations import explanation
from attn_tui.present.titles import stage_title


class Explanation(Static):
    """Two or three sentences for the stage; `t` switches the language."""

    def show(self, stage: str, keys: tuple[str, ...]) -> None:
        text = Text()
        text.append(_("Why") + " ", "bold")
        text.append(stage_title(stage), "bold yellow")  # as the stage bar names it
        text.append("  " + _("(t: 한국어)"), "dim")
        text.append("\n" + explanation(stage, keys))
        self.update(text)
