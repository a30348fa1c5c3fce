"""The explanation panel: what the current stage does and why, in English or Korean."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from attn_tui.present.explanations import explanation


class Explanation(Static):
    """Two or three sentences for the stage; `t` switches the language."""

    def show(self, stage: str, keys: tuple[str, ...], language: str) -> None:
        text = Text()
        text.append("Why " if language == "en" else "설명 ", "bold")
        text.append(f"{stage}", "bold yellow")
        text.append("  (t: 한국어)" if language == "en" else "  (t: English)", "dim")
        text.append("\n" + explanation(stage, keys, language))
        self.update(text)
