"""The input pane: a sentence, typed Q/K/V (or X) matrices, or a shipped sample.

Validation runs on every keystroke with the torch-free parser; an error is shown
inline with its line and column and the text stays exactly as typed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input, Label, OptionList, TabbedContent, TabPane, TextArea
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from attn_tui.core.stage import Trace

from attn_tui.core.errors import InputError
from attn_tui.core.inputs import parse_matrix, tokenize
from attn_tui.core.samples import load_samples
from attn_tui.core.settings import MatrixInput, SentenceInput, XInput
from attn_tui.present.text import printable
from attn_tui.render.notes import MAX_TOKENS_SHOWN, model_note
from attn_tui.tui.messages import SampleChosen, SourceEdited
from attn_tui.tui.widgets.scroll import QuietScroll

EDITORS = ("Q", "K", "V", "X")


def _matrix_text(rows: list[list[float]]) -> str:
    return "\n".join(" ".join(f"{x:g}" for x in row) for row in rows)


class InputPane(Vertical):
    """Three tabs; the tab typed in last decides the input."""

    DEFAULT_CSS = """
    InputPane TabPane { padding: 0; }
    InputPane #sentence { margin: 0 0 1 0; }
    InputPane #tokens { width: 100%; height: auto; }
    InputPane #matrix-status { width: 100%; height: auto; max-height: 3; color: $success; }
    InputPane #matrix-status.-error { color: $error; text-style: bold; }
    InputPane .hint { width: 100%; color: $text-muted; }
    InputPane .matrix-editor { height: 5; }
    InputPane .editor-title { text-style: bold; margin: 1 0 0 0; }
    InputPane .editor-error { width: 100%; color: $error; height: auto; }
    InputPane #sample-list { height: 1fr; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.multihead = False  # set by the app: the Matrices tab then feeds X, not Q/K/V
        self.model_mode = False  # set by the app: a model tokenizes the sentence itself
        self._parsed: dict[str, list[list[float]] | None] = {name: None for name in EDITORS}
        self._tokens: dict[str, tuple[str, ...] | None] = {"query": None, "key": None}

    def compose(self) -> ComposeResult:
        with TabbedContent(id="input-tabs", initial="tab-sentence"):
            yield from self._tabs()

    def _tabs(self) -> ComposeResult:
        with TabPane("Sentence", id="tab-sentence"), QuietScroll():
            yield Input(placeholder="type a sentence", id="sentence")
            yield Label("", id="tokens")
        with TabPane("Matrices", id="tab-matrices"):
            yield Label("type Q, K, V (or X for multihead)", id="matrix-status")
            with QuietScroll(id="matrices"):
                yield Label("one row per line, numbers split by spaces or commas", classes="hint")
                for name in EDITORS:
                    title = f"{name}  (multihead: token vectors)" if name == "X" else name
                    yield Label(title, classes="editor-title")
                    yield TextArea("", id=f"edit-{name}", classes="matrix-editor", soft_wrap=False)
                    yield Label("", id=f"error-{name}", classes="editor-error")
        with TabPane("Samples", id="tab-samples"):
            yield OptionList(*(Option(Text(f"{s.name}\n  {s.description}"), id=s.name)
                               for s in load_samples().values()), id="sample-list")

    def load(self, source: SentenceInput | MatrixInput | XInput) -> None:
        """Show a source (from a sample or the command line) without posting it back."""
        with self.prevent(Input.Changed, TextArea.Changed):
            if isinstance(source, SentenceInput):
                self.query_one("#sentence", Input).value = source.text
                self._show_tokens(source.text)
                self.query_one(TabbedContent).active = "tab-sentence"
                return
            if isinstance(source, MatrixInput):
                texts = {"Q": source.q, "K": source.k, "V": source.v}
                self._tokens = {"query": source.query_tokens, "key": source.key_tokens}
            else:
                texts = {"X": source.x}
                self._tokens = {"query": source.tokens, "key": source.tokens}
            for name, rows in texts.items():
                self.query_one(f"#edit-{name}", TextArea).text = _matrix_text(rows)
                self._parsed[name] = rows
                self.query_one(f"#error-{name}", Label).update("")
            self._show_status(self._shapes(), ok=True)
            self.query_one(TabbedContent).active = "tab-matrices"

    def show_sentence(self, text: str) -> None:
        """Put a sentence in its field (a model switch) without touching the matrix editors or posting it."""
        with self.prevent(Input.Changed):
            self.query_one("#sentence", Input).value = text
            self._show_tokens(text)

    @property
    def sentence(self) -> str:
        return self.query_one("#sentence", Input).value

    def show_model_tokens(self, trace: Trace) -> None:
        """A model's own tokens or a decoder's output under the sentence (known after a run)."""
        self.query_one("#tokens", Label).update(model_note(trace))

    def _show_tokens(self, text: str) -> bool:
        label = self.query_one("#tokens", Label)
        if self.model_mode:
            label.update(Text("the model tokenizes this itself…", style="dim"))
            return True
        try:
            tokens = tokenize(text)
        except InputError as exc:
            label.update(Text(str(exc), style="red"))
            return False
        shown = Text("tokens: ")
        for token in tokens[:MAX_TOKENS_SHOWN]:
            shown.append(f" {printable(token)} ", "reverse")
            shown.append("  ")
        more = len(tokens) - MAX_TOKENS_SHOWN
        shown.append(f"… {more} more " if more > 0 else "")
        shown.append(f" ({len(tokens)})")
        label.update(shown)
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "sentence":
            return
        event.stop()
        if self._show_tokens(event.value):
            self.post_message(SourceEdited(SentenceInput(event.value)))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        name = (event.text_area.id or "").removeprefix("edit-")
        if name not in EDITORS:
            return
        error = self.query_one(f"#error-{name}", Label)
        try:
            self._parsed[name] = parse_matrix(event.text_area.text, name)
            error.update("")
        except InputError as exc:
            self._parsed[name] = None
            error.update(Text(f"✗ {exc}"))
            self._show_status(f"✗ {exc}", ok=False)
            return
        self._show_status(self._shapes(), ok=True)
        self._tokens = {"query": None, "key": None}  # typed rows no longer match the sample's labels
        source = self.matrix_source(x=name == "X" or self.multihead)
        if source is not None:
            self.post_message(SourceEdited(source))

    def _shapes(self) -> str:
        parts = [f"{n} {len(rows)}×{len(rows[0])}" for n, rows in self._parsed.items() if rows]
        return "✓ " + ", ".join(parts) if parts else ""

    def _show_status(self, text: str, ok: bool) -> None:
        """One always-visible line for the editors, so an error below the fold is not missed."""
        status = self.query_one("#matrix-status", Label)
        status.update(Text(text))
        status.set_class(not ok, "-error")

    def matrix_source(self, x: bool) -> MatrixInput | XInput | None:
        """The typed matrices as an input, or None while any one needed is invalid or empty."""
        if x:
            rows = self._parsed["X"]
            return None if rows is None else XInput(rows, self._tokens["query"])
        q, k, v = (self._parsed[n] for n in "QKV")
        if q is None or k is None or v is None:
            return None
        return MatrixInput(q, k, v, self._tokens["query"], self._tokens["key"])

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(SampleChosen(event.option.id))
