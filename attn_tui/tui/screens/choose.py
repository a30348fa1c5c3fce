"""A small modal list: pick one of a few options (what to compare with), Esc cancels."""

from __future__ import annotations

from typing import Generic, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from attn_tui.i18n import N_, _

T = TypeVar("T")


class ChoiceScreen(ModalScreen["T | None"], Generic[T]):
    """Options by label; Enter or a click picks one, Esc leaves with None."""

    DEFAULT_CSS = """
    ChoiceScreen { align: center middle; }
    ChoiceScreen > Vertical {
        width: 70%; max-width: 80; height: auto; max-height: 80%; border: round $accent; background: $surface;
        padding: 0 1;
    }
    ChoiceScreen .choice-title { text-style: bold; margin: 0 0 1 0; }
    ChoiceScreen .hint { color: $text-muted; }
    ChoiceScreen OptionList { height: auto; max-height: 20; }
    """

    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="choice.cancel")]

    def __init__(self, title: str, options: list[tuple[str, T]]) -> None:
        super().__init__()
        self.title_text = title
        self.options = options

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, classes="choice-title")
            yield OptionList(*(Option(label, id=str(n)) for n, (label, _value) in enumerate(self.options)),
                             id="choices")
            yield Label(_("Enter picks, Esc cancels"), classes="hint")

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.options[int(event.option.id or 0)][1])

    def action_cancel(self) -> None:
        self.dismiss(None)
