"""The help screen: every key binding of the app, generated from the bindings themselves."""

from __future__ import annotations

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from attn_tui.i18n import N_, _

NOTES = (
    N_("Arrows: ← → step through the stages (as h / l do); ↑ ↓ move the cell cursor between rows; shift+arrows "
       "move the cursor in any direction; a mouse click puts it on a cell, and a click on a stage's name in the "
       "stage bar jumps there."),
    N_("Typing in a text field keeps its keys (arrows move the text cursor there): press Esc or click the heatmap "
       "to come back. i, Q, K, V, X and m jump straight to the sentence, an editor or the model pane."),
    N_("Masks use torch's convention: 1 = may attend. On the masked stage x masks or unmasks the cell under the "
       "cursor (a custom mask, ANDed with the mask kind); rows may be named in the editors, e.g. '<pad>: 0 0 0'."),
    N_("c compares the stage with one setting changed (A, B and B − A, one cursor); e exports the stage, the "
       "trace or the screen; ctrl+z undoes loading a sample or a mask edit. Your settings and typing are kept "
       "for the next start (attn-tui --fresh ignores them)."),
    N_("Real models (model pane, or --model): [ ] change the head, { } the layer, g shows every head, r the "
       "attention rollout (r again: value-weighted by what each head moved). The seq2seq date model: → steps "
       "through each decoder step's stages."),
    N_("a opens the head atlas: every head (layers × heads) coloured by its strongest role. previous-token, "
       "duplicate-token and induction are scored as TransformerLens's detect_head does (the share of a head's "
       "attention on the cells its token pattern names: the key just before; earlier copies of the query's token; "
       "the key after such a copy); sink is the mean weight on the first token, local the share within ±2 "
       "positions, broad each row's entropy over its most. Grey: mixed, no role at its threshold. There: arrows "
       "move, f / F filter by a role, o ranks the heads, c puts B's atlas beside A's, Enter opens the head's "
       "weights, Esc goes back."),
    N_("Heads, layers, decoder steps and flash's key tiles are counted from 0, as torch indexes them and as "
       "the command line's --layer and --head take them: 'head 0 of 2' is the first of two. The digits reach "
       "the stage bar's first ten stages; / lists every stage, step and tile."),
)


def key_text(key: str) -> str:
    names = {"left": "←", "right": "→", "up": "↑", "down": "↓", "question_mark": "?",
             "left_square_bracket": "[", "right_square_bracket": "]", "space": "space",
             "left_curly_bracket": "{", "right_curly_bracket": "}",
             "comma": ",", "full_stop": ".", "slash": "/"}
    return " / ".join(names.get(k, k) for k in key.split(","))


class HelpScreen(ModalScreen[None]):
    """Lists the app's bindings; any of Esc, q, ? or F1 closes it."""

    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen #help-body {
        width: 80%; max-width: 100; height: 90%; border: round $accent; background: $surface; padding: 0 1;
    }
    HelpScreen .hint { color: $text-muted; }
    HelpScreen #help-notes { margin: 0 0 1 0; }
    """

    BINDINGS = [
        Binding("escape,q,question_mark,f1", "close", N_("Close help"), id="help.close"),
        Binding("t", "language", "한/En", id="help.language"),
    ]

    def __init__(self, bindings: list[Binding]) -> None:
        super().__init__()
        self.bindings_shown = bindings

    def compose(self) -> ComposeResult:
        table = Table(title=_("attn-tui keys"), expand=True, show_edge=False)
        table.add_column(_("shortcut"), style="bold yellow", no_wrap=True)
        table.add_column(_("does"))
        digits_done = False
        for b in self.bindings_shown:
            if (b.id or "").startswith("stage.jump"):
                if not digits_done:
                    table.add_row("1 … 9, 0", _("Jump to stage 1 … 10 (numbered in the stage bar)"))
                    digits_done = True
                continue
            table.add_row(key_text(b.key), _(b.description) + (f": {_(b.tooltip)}" if b.tooltip else ""))
        table.add_row("ctrl+p", _("Command palette: every action, stage, sample and variant by name"))
        with VerticalScroll(id="help-body"):
            yield Static(_("Esc, q, ? or F1 closes this screen; t switches 한국어 / English."), classes="hint")
            yield Static("\n".join("• " + _(note) for note in NOTES), id="help-notes")
            yield Static(table)

    def action_close(self) -> None:
        self.dismiss(None)

    def action_language(self) -> None:
        """`t` here as everywhere: the app switches language, and the help is written again in it."""
        self.app.action_toggle_language()  # type: ignore[attr-defined]
        self.refresh(recompose=True)
