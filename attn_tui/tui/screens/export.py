"""The export screen: the current stage or the whole trace (or, from the atlas, its heads' role scores) as .json,
.csv or .npz, or the screen as SVG."""

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

# What can be exported, the words the dialog offers it with, and the name it offers.
WHAT = {"stage": (N_("this stage"), ""), "trace": (N_("the whole trace"), "attn-tui-trace"),
        "atlas": (N_("the atlas: heads and roles"), "attn-tui-atlas"),
        "screen": (N_("the screen (SVG)"), "attn-tui-screen")}
FORMATS = ("json", "csv", "npz")
NPZ = ("stage", "trace")  # what has tensors to put in an .npz
SUFFIXES = (".json", ".csv", ".npz", ".svg")  # what an export writes: a typed one of these gives way to the chosen
LARGE = 20 * 2**20  # bytes: a larger export says its size and asks before it is written


def suffix_for(what: str, fmt: str) -> str:
    """The extension of what is written: .svg for the screen, the format's for a file, none for a folder of CSVs."""
    return "" if what == "trace" and fmt == "csv" else "." + ("svg" if what == "screen" else fmt)


def conformed(path: Path, what: str, fmt: str) -> Path:
    """`path` with the extension of what is written, where it was typed with another export's (`x.json` for the
    screen's SVG is `x.svg`); any other name is kept as typed."""
    if path.suffix.lower() not in SUFFIXES:
        return path
    return path.with_name(path.with_suffix("").name + suffix_for(what, fmt))


def target(what: str, fmt: str, text: str) -> Path:
    """The path typed for an export, with the extension of what is written there, checked for it (a folder for a
    trace's CSV files)."""
    from attn_tui.io.files import writable_file, writable_folder
    from attn_tui.tui.served import inside_export_folder, served

    if not text:
        raise InputError(Msg("name a file to write to"))
    path = Path(text)
    with suppress(RuntimeError):  # `~someone` with no such user: the path as typed
        path = path if served() else path.expanduser()
    path = inside_export_folder(path)  # served: serve's folder only; otherwise the path as typed
    if not (what in NPZ and fmt == "csv" and path.is_dir()):  # a CSV into a folder named: its name is kept
        path = conformed(path, what, fmt)
    what_msg = Msg("the screenshot") if what == "screen" else Msg("the export")
    folder = fmt == "csv" and (what == "trace" or (what == "stage" and path.is_dir()))
    return (writable_folder if folder else writable_file)(path, what_msg)


@dataclass(frozen=True)
class ExportAsk:
    what: str  # stage | trace | atlas | screen
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

    def __init__(self, stem: str, folder: Path, what: tuple[str, ...] = ("stage", "trace", "screen")) -> None:
        """`stem`: the name offered for the first of `what`; `folder`: where a bare file name goes."""
        super().__init__()
        self.stem, self.folder, self.what = stem, folder, what

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(_("Export"), classes="export-title")
            yield EchoInput(str(self._path(self.what[0], "json")), id="export-path")
            yield Label(_("Enter writes the file; Tab reaches the choices below. The notice says where it went."),
                        classes="hint")
            yield Label(self._where(), classes="hint", markup=False)
            with Horizontal(id="export-choices"):
                with RadioSet(id="export-what"):
                    for n, what in enumerate(self.what):
                        yield ShapeRadioButton(_(WHAT[what][0]), value=n == 0, id=f"what-{what}")
                with RadioSet(id="export-format"):
                    yield ShapeRadioButton(".json", value=True, id="fmt-json")
                    yield ShapeRadioButton(_(".csv (the trace: a folder)") if "trace" in self.what else ".csv",
                                           id="fmt-csv")
                    yield ShapeRadioButton(".npz", id="fmt-npz", disabled=self.what[0] not in NPZ)
            yield Label("", id="export-error", markup=False)
            with Horizontal(id="export-buttons"):
                yield Button(_("Export"), variant="primary", id="export-go")
                yield Button(_("Cancel"), id="export-cancel")

    def on_mount(self) -> None:
        self.query_one("#export-path", Input).focus()  # first on screen: Enter writes at once, Tab goes on down

    def _names(self) -> tuple[str, ...]:
        """Every name the dialog offers: a typed name that is one of these follows the choice."""
        return (self.stem, *(name for _words, name in WHAT.values() if name))

    def _where(self) -> str:
        """Where a bare file name goes (never serve's path on its disk: a visitor sees only names inside it)."""
        from attn_tui.tui.served import served

        if served():
            return _("A file name goes into serve's export folder")
        return _("A file name goes into {folder} (where the last export went, or where attn-tui started); type a "
                 "path to write anywhere else").format(folder=self.folder.resolve())

    def _path(self, what: str, fmt: str) -> Path:
        name = self.stem if what == self.what[0] else WHAT[what][1] or self.stem
        return self.folder / (name + suffix_for(what, fmt))

    def _choice(self) -> tuple[str, str]:
        what = self.query_one("#export-what", RadioSet).pressed_button
        fmt = self.query_one("#export-format", RadioSet).pressed_button
        what_name = (what.id or "").removeprefix("what-") if what is not None else self.what[0]
        fmt_name = (fmt.id or "fmt-json").removeprefix("fmt-") if fmt is not None else "json"
        return what_name, "svg" if what_name == "screen" else fmt_name

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        what, fmt = self._choice()
        self.query_one("#export-format", RadioSet).disabled = what == "screen"
        self.query_one("#fmt-npz").disabled = what not in NPZ
        path_input = self.query_one("#export-path", Input)
        if not path_input.value.strip():
            return
        typed = Path(path_input.value.strip())
        offered = typed.name and (typed.with_suffix("") if typed.suffix.lower() in SUFFIXES else typed).name in (
            self._names())
        # a name the dialog offered follows the choice; one the user typed keeps its folder and name, only its
        # extension follows what is written
        path_input.value = str(typed.parent / self._path(what, fmt).name if offered else conformed(typed, what, fmt))

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
