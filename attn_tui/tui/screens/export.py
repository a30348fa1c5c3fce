"""The export screen: the current stage or the whole trace as .npz, .csv or .json, or the screen as SVG."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, RadioSet

from attn_tui.errors import AttnError, InputError
from attn_tui.i18n import N_, Msg, _
from attn_tui.tui.widgets.echo import EchoInput, shown
from attn_tui.tui.widgets.toggle import ShapeRadioButton

WHAT = ("stage", "trace", "screen")
FORMATS = ("json", "csv", "npz")


def target(what: str, fmt: str, text: str) -> Path:
    """The path typed for an export, checked for what will be written there (a folder for a trace's CSV files)."""
    from attn_tui.io.files import writable_file, writable_folder
    from attn_tui.tui.served import inside_export_folder, served

    if not text:
        raise InputError(Msg("name a file to write to"))
    path = Path(text)
    with suppress(RuntimeError):  # `~someone` with no such user: the path as typed
        path = path if served() else path.expanduser()
    path = inside_export_folder(path)  # served: serve's folder only; otherwise the path as typed
    what_msg = Msg("the screenshot") if what == "screen" else Msg("the export")
    folder = fmt == "csv" and (what == "trace" or path.is_dir())
    return (writable_folder if folder else writable_file)(path, what_msg)


@dataclass(frozen=True)
class ExportAsk:
    what: str  # stage | trace | screen
    fmt: str  # json | csv | npz | svg
    path: Path


class ExportScreen(ModalScreen["ExportAsk | None"]):
    """Choose what and how; the path is shown and editable; Enter (or Export) writes, Esc cancels."""

    DEFAULT_CSS = """
    ExportScreen { align: center middle; }
    ExportScreen > Vertical {
        width: 80%; max-width: 90; height: auto; border: round $accent; background: $surface; padding: 0 1;
    }
    ExportScreen .export-title { text-style: bold; margin: 0 0 1 0; }
    ExportScreen RadioSet { width: 1fr; height: auto; }
    ExportScreen #export-choices { height: auto; }
    ExportScreen #export-path { margin: 1 0 0 0; }
    ExportScreen #export-buttons { height: auto; margin: 1 0 0 0; }
    ExportScreen .hint { color: $text-muted; width: 100%; }
    ExportScreen #export-error { color: $error; width: 100%; height: auto; }
    """

    BINDINGS = [Binding("escape", "cancel", N_("Cancel"), id="export.cancel")]

    def __init__(self, stem: str, folder: Path) -> None:
        super().__init__()
        self.stem, self.folder = stem, folder

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(_("Export"), classes="export-title")
            with Horizontal(id="export-choices"):
                with RadioSet(id="export-what"):
                    yield ShapeRadioButton(_("this stage"), value=True, id="what-stage")
                    yield ShapeRadioButton(_("the whole trace"), id="what-trace")
                    yield ShapeRadioButton(_("the screen (SVG)"), id="what-screen")
                with RadioSet(id="export-format"):
                    yield ShapeRadioButton(".json", value=True, id="fmt-json")
                    yield ShapeRadioButton(_(".csv (the trace: a folder)"), id="fmt-csv")
                    yield ShapeRadioButton(".npz", id="fmt-npz")
            yield EchoInput(str(self._path("stage", "json")), id="export-path")
            yield Label(_("Enter writes the file (shift+Tab reaches the choices); the notice says where it went"),
                        classes="hint")
            yield Label("", id="export-error", markup=False)
            with Horizontal(id="export-buttons"):
                yield Button(_("Export"), variant="primary", id="export-go")
                yield Button(_("Cancel"), id="export-cancel")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()  # Enter writes at once; shift+Tab reaches the choices

    def _path(self, what: str, fmt: str) -> Path:
        name = {"stage": self.stem, "trace": "attn-tui-trace", "screen": "attn-tui-screen"}[what]
        suffix = "" if what == "trace" and fmt == "csv" else "." + ("svg" if what == "screen" else fmt)
        return self.folder / (name + suffix)

    def _choice(self) -> tuple[str, str]:
        what = self.query_one("#export-what", RadioSet).pressed_button
        fmt = self.query_one("#export-format", RadioSet).pressed_button
        what_name = (what.id or "what-stage").removeprefix("what-") if what is not None else "stage"
        fmt_name = (fmt.id or "fmt-json").removeprefix("fmt-") if fmt is not None else "json"
        return what_name, "svg" if what_name == "screen" else fmt_name

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        what, fmt = self._choice()
        self.query_one("#export-format", RadioSet).disabled = what == "screen"
        self.query_one("#export-path", Input).value = str(self._path(what, fmt))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._go()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "export-go":
            self._go()
        else:
            self.dismiss(None)

    def _go(self) -> None:
        """Write, once the path can take what is chosen; otherwise say why here, with the path still as typed."""
        what, fmt = self._choice()
        text = self.query_one("#export-path", Input).value.strip()
        try:
            ask = ExportAsk(what, fmt, target(what, fmt, text))
        except AttnError as exc:
            self.query_one("#export-error", Label).update(shown("✗ " + str(exc)))
            return
        self.dismiss(ask)

    def action_cancel(self) -> None:
        self.dismiss(None)
