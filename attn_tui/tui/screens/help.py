"""The help screen: every key binding of the app, generated from the bindings themselves."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

NOTES = (
    "Arrows: ← → step through the stages (as h / l do); ↑ ↓ move the cell cursor between rows;",
    "shift+arrows move the cursor in any direction; a mouse click puts it on a cell.",
    "Typing in a text field keeps its keys (arrows move the text cursor there): press Esc or",
    "click the heatmap to come back. The mask shown is torch's convention: 1 = may attend.",
    "Real models (model pane, or --model): [ ] change the head, { } the layer, g shows every head,",
    "r the attention rollout. The seq2seq date model: → steps through each decoder step's stages.",
)


def _key_text(key: str) -> str:
    names = {"left": "←", "right": "→", "up": "↑", "down": "↓", "question_mark": "?",
             "left_square_bracket": "[", "right_square_bracket": "]", "space": "space",
             "left_curly_bracket": "{", "right_curly_bracket": "}",
             "comma": ",", "full_stop": "."}
    return " / ".join(names.get(k, k) for k in key.split(","))


class HelpScreen(ModalScreen[None]):
    """Lists the app's bindings; any of Esc, q, ? or F1 closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help-body {
        width: 80%; max-width: 90; height: 90%; border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen .hint { color: $text-muted; }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", "Close help", id="help.close"),
    ]

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self.bindings_shown = bindings

    def compose(self) -> ComposeResult:
        table = Table(title="attn-tui keys", expand=True, show_edge=False)
        table.add_column("key", style="bold yellow", no_wrap=True)
        table.add_column("does")
        digits_done = False
        for b in self.bindings_shown:
            if (b.id or "").startswith("stage.jump"):
                if not digits_done:
                    table.add_row("1 … 9, 0", "Jump to stage 1 … 10 (numbered in the stage bar)")
                    digits_done = True
                continue
            table.add_row(_key_text(b.key), b.description + (f": {b.tooltip}" if b.tooltip else ""))
        table.add_row("ctrl+p", "Command palette: every action, stage, sample and variant by name")
        with VerticalScroll(id="help-body"):
            yield Static("Esc, q, ? or F1 closes this screen.", classes="hint")
            yield Static("\n".join(NOTES), id="help-notes")
            yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)
