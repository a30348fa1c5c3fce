"""The inspector: the arithmetic of the cell under the cursor at the current stage."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.widgets import Static

if TYPE_CHECKING:
    from attn_tui.core.explain import Arithmetic


class Inspector(Static):
    """Shows an `Arithmetic` (from attn_tui.core.explain) as a few lines, and whether it matches the stage."""

    DEFAULT_CSS = """
    Inspector { height: auto; }
    """

    def show(self, where: str, arithmetic: Arithmetic, origin: str | None = None) -> None:
        text = Text()
        text.append("Cell ", "bold")
        text.append(where, "bold yellow")
        text.append("\n")
        text.append(arithmetic.title, "bold cyan")
        for line in arithmetic.lines:
            text.append("\n" + line)
        text.append(f"\nstage value {arithmetic.expected:.6g}", "dim")
        matches = arithmetic.matches
        text.append("  ✓ matches" if matches else f"  ✗ recomputed {arithmetic.total:.6g}",
                    "green" if matches else "red")
        if origin:  # a recorded stage: the user's line that made it
            from attn_tui.tui.widgets.stage_bar import made_by

            text.append("\n" + made_by(origin), "italic")
        self.update(text)
