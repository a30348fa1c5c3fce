"""The inspector: the arithmetic of the cell under the cursor at the current stage."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class Inspector(Static):
    """Shows an `Arithmetic` (from attn_tui.core.inspect) as a few lines of text."""

    def show(self, where: str, title: str, lines: list[str], total: float, expected: float) -> None:
        text = Text()
        text.append("Cell ", "bold")
        text.append(where, "bold yellow")
        text.append("\n")
        text.append(title, "bold cyan")
        for line in lines:
            text.append("\n" + line)
        agree = total == expected or abs(total - expected) <= 1e-4 * max(1.0, abs(expected))
        text.append(f"\nstage value {expected:.6g}", "dim")
        text.append("  ✓ matches" if agree else f"  ✗ recomputed {total:.6g}", "green" if agree else "red")
        self.update(text)
