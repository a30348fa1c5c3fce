"""The input pane: a sentence, typed Q/K/V or X matrices (rows may be named), or a shipped sample.

Validation runs on every keystroke with the torch-free parser; an error is shown
inline with its line and column and the text stays exactly as typed. The status line
above the editors checks the shapes the same way the computation will, so it never says
✓ while the heatmap says the shapes clash.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.reactive import reactive
from textual.widgets import Checkbox, Input, Label, OptionList, TabbedContent, TabPane, TextArea
from textual.widgets.option_list import Option

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace

from attn_tui.ask.inputs import Parsed, check_qkv_shapes, parse_rows, tokenize
from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import MatrixInput, SentenceInput, XInput
from attn_tui.errors import InputError
from attn_tui.i18n import Msg, _
from attn_tui.present.model_view import model_note_of
from attn_tui.present.text import printable
from attn_tui.render.notes import MAX_TOKENS_SHOWN, model_note
from attn_tui.tui.messages import InputTyped, SampleChosen, SourceEdited, SourceRejected
from attn_tui.tui.state import Typed
from attn_tui.tui.widgets.echo import EchoInput, EchoTextArea
from attn_tui.tui.widgets.echo import shown as drawn
from attn_tui.tui.widgets.scroll import QuietScroll
from attn_tui.tui.widgets.toggle import ShapeCheckbox

EDITORS = ("Q", "K", "V", "X")
TABS = ("tab-sentence", "tab-matrices", "tab-samples")


def matrix_text(rows: list[list[float]], names: tuple[str, ...] | None = None) -> str:
    """Rows as the editors show them: `name: 1 0 0` when the rows are named."""
    lines = [" ".join(f"{x:g}" for x in row) for row in rows]
    if names is not None and len(names) == len(rows):
        lines = [f"{name}: {line}" for name, line in zip(names, lines)]
    return "\n".join(lines)


class InputPane(Vertical):
    """Three tabs; the editor typed in last (Q/K/V, or X) decides what the matrices feed."""

    DEFAULT_CSS = """
    InputPane TabPane { padding: 0; }
    InputPane #sentence { margin: 0 0 1 0; }
    InputPane #tokens { width: 100%; height: auto; }
    InputPane #matrix-status { width: 100%; height: auto; max-height: 3; color: $success; }
    InputPane #matrix-status.-error { color: $error; text-style: bold; }
    InputPane .hint { width: 100%; color: $text-muted; }
    InputPane #keep-mask { width: 100%; }
    InputPane .matrix-editor { height: 5; }
    InputPane .editor-title { width: 100%; height: auto; text-style: bold; margin: 1 0 0 0; }
    InputPane .editor-error { width: 100%; color: $error; height: auto; }
    InputPane #sample-list { height: 1fr; }
    InputPane #matrices.-idle { opacity: 50%; }  /* kept for the variants while a model reads the sentence */
    """

    model_mode: reactive[bool] = reactive(False, init=False)  # set by the app: a model tokenizes the sentence

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.multihead = False  # set by the app: typed Q/K/V cannot feed a variant that projects them itself
        self.same_width = True  # set by the app: Q and K must share their width (dot, scaled_dot)
        self.last_matrix = "qkv"  # which editors were typed in last: "qkv" or "x"
        self._parsed: dict[str, Parsed | None] = {name: None for name in EDITORS}
        self._errors: dict[str, InputError] = {}  # each editor's parse error, drawn in the language on show

    def watch_model_mode(self, on: bool) -> None:
        """A model reads the sentence: its tab comes forward, and the matrices, kept as typed for the variants, are
        dimmed and say so (an exercise's Q, K, V never look as if they fed the model)."""
        if on:
            self.query_one(TabbedContent).active = "tab-sentence"
        self.query_one("#matrices").set_class(on, "-idle")
        self._show_status(*self._status())
        self._show_tokens(self.sentence)

    def compose(self) -> ComposeResult:
        with TabbedContent(id="input-tabs", initial="tab-sentence"):
            yield from self._tabs()

    def _tabs(self) -> ComposeResult:
        with TabPane(_("Sentence"), id="tab-sentence"), QuietScroll():
            yield EchoInput(placeholder=_("type a sentence"), id="sentence")
            yield Label("", id="tokens")
        with TabPane(_("Matrices"), id="tab-matrices"):
            yield Label(_("type Q, K, V, or X (token vectors) for any variant"), id="matrix-status")
            with QuietScroll(id="matrices"):
                yield Label(self._hint(), classes="hint", id="matrix-hint")
                yield ShapeCheckbox(self._keep_label(), False, compact=True, id="keep-mask")
                for name in EDITORS:
                    yield Label(self._editor_title(name), classes="editor-title", id=f"title-{name}")
                    yield EchoTextArea("", id=f"edit-{name}", classes="matrix-editor", soft_wrap=False)
                    yield Label("", id=f"error-{name}", classes="editor-error")
        with TabPane(_("Samples"), id="tab-samples"):
            yield OptionList(*self._sample_options(), id="sample-list")

    @staticmethod
    def _hint() -> str:
        return _("one row per line, numbers split by spaces or commas; a row may be named: 나는: 0.1 0.2")

    @staticmethod
    def _keep_label() -> str:
        return _("keep the mask")

    @property
    def keep_mask(self) -> bool:
        """Ticked: typed matrices of new shapes keep the mask; unticked (the default), they start with none."""
        return self.query_one("#keep-mask", Checkbox).value

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()  # a choice about the next matrices: nothing to compute now

    @staticmethod
    def _editor_title(name: str) -> str:
        return name + "  " + _("(token vectors: Q, K, V come from X)") if name == "X" else name

    @staticmethod
    def _sample_options() -> list[Option]:
        return [Option(Text(f"{s.name}\n  {_(s.description)}"), id=s.name) for s in load_samples().values()]

    def relabel(self) -> None:
        """Every fixed string in the language on show (after `t`); what was typed is untouched."""
        tabs = self.query_one(TabbedContent)
        for pane_id, title in (("tab-sentence", _("Sentence")), ("tab-matrices", _("Matrices")),
                               ("tab-samples", _("Samples"))):
            tabs.get_tab(pane_id).label = title
        self.query_one("#sentence", Input).placeholder = _("type a sentence")
        self.query_one("#matrix-hint", Label).update(self._hint())
        self.query_one("#keep-mask", Checkbox).label = self._keep_label()
        for name in EDITORS:
            self.query_one(f"#title-{name}", Label).update(self._editor_title(name))
            if name in self._errors:
                self.query_one(f"#error-{name}", Label).update(drawn(f"✗ {self._errors[name]}"))
        samples = self.query_one("#sample-list", OptionList)
        highlighted = samples.highlighted
        samples.clear_options()
        samples.add_options(self._sample_options())
        samples.highlighted = highlighted
        if not self.model_mode:
            self._show_tokens(self.sentence)
        self._show_status(*self._status())

    # ----- putting things in ---------------------------------------------------------------
    def load(self, source: SentenceInput | MatrixInput | XInput) -> None:
        """Show a source (from a sample or the command line) without posting it back."""
        with self.prevent(Input.Changed, TextArea.Changed):
            if source.sentence is not None:
                self.query_one("#sentence", Input).value = source.sentence
                self._show_tokens(source.sentence)
                self.query_one(TabbedContent).active = "tab-sentence"
                return
            texts = source.matrices
            self.last_matrix = "x" if "X" in source.matrices else "qkv"
            for name, (rows, names) in texts.items():
                text = matrix_text(rows, names)
                self.query_one(f"#edit-{name}", TextArea).text = text
                self._parse(name, text)
            self._show_status(*self._status())
            self.query_one(TabbedContent).active = "tab-matrices"

    def show_sentence(self, text: str) -> None:
        """Put a sentence in its field (a model switch) without touching the matrix editors or posting it."""
        with self.prevent(Input.Changed):
            self.query_one("#sentence", Input).value = text
            self._show_tokens(text)

    @property
    def sentence(self) -> str:
        return self.query_one("#sentence", Input).value

    def typed(self) -> Typed:
        return Typed(self.sentence, {name: self.query_one(f"#edit-{name}", TextArea).text for name in EDITORS},
                     self.query_one(TabbedContent).active)

    def restore(self, typed: Typed) -> None:
        """Put back what was typed (undo, or a saved session), without posting it."""
        with self.prevent(Input.Changed, TextArea.Changed):
            self.query_one("#sentence", Input).value = typed.sentence
            self._show_tokens(typed.sentence)
            for name in EDITORS:
                text = typed.editors.get(name, "")
                self.query_one(f"#edit-{name}", TextArea).text = text
                self._parse(name, text)
            if typed.tab in TABS:
                self.query_one(TabbedContent).active = typed.tab
        self._show_status(*self._status())

    def show_model_tokens(self, trace: Trace) -> None:
        """A model's own tokens or a decoder's output under the sentence (known after a run)."""
        self.query_one("#tokens", Label).update(model_note(model_note_of(trace, MAX_TOKENS_SHOWN)))

    # ----- typing --------------------------------------------------------------------------
    def _show_tokens(self, text: str) -> bool:
        label = self.query_one("#tokens", Label)
        if self.model_mode:
            label.update(Text(_("the model tokenizes this itself…"), style="dim"))
            return True
        try:
            tokens = tokenize(text)
        except InputError as exc:
            label.update(drawn(str(exc), "red"))
            return False
        shown = Text(_("tokens:") + " ")
        for token in tokens[:MAX_TOKENS_SHOWN]:
            shown.append(f" {printable(token)} ", "reverse")
            shown.append("  ")
        more = len(tokens) - MAX_TOKENS_SHOWN
        shown.append(_("… {n} more").format(n=more) + " " if more > 0 else "")
        shown.append(f" ({len(tokens)})")
        label.update(shown)
        return True

    def on_input_changed(self, event: Input.Changed) -> None:
        if event.input.id != "sentence":
            return
        event.stop()
        self.post_message(InputTyped())
        if self._show_tokens(event.value):
            self.post_message(SourceEdited(SentenceInput(event.value)))

    def _parse(self, name: str, text: str) -> None:
        error = self.query_one(f"#error-{name}", Label)
        self._errors.pop(name, None)
        if not text.strip():
            self._parsed[name] = None
            error.update("")
            return
        try:
            self._parsed[name] = parse_rows(text, name)
            error.update("")
        except InputError as exc:
            self._parsed[name] = None
            self._errors[name] = exc
            error.update(drawn(f"✗ {exc}"))

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        name = (event.text_area.id or "").removeprefix("edit-")
        if name not in EDITORS:
            return
        self.last_matrix = "x" if name == "X" else "qkv"
        self.post_message(InputTyped())
        self._parse(name, event.text_area.text)
        self._show_status(*self._status())
        source = self.matrix_source()
        if source is not None:
            self.post_message(SourceEdited(source))
        elif (failed := self.first_error()) is not None:
            self.post_message(SourceRejected(Msg("✗ {error}", error=failed)))

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        """Back on the sentence: an error of the matrices no longer stands on the explorer's error line (the
        Matrices tab still says it, over its editors)."""
        if event.pane.id == "tab-sentence" and self.first_error() is not None and not self.model_mode:
            self.post_message(SourceRejected(None))

    def first_error(self) -> InputError | None:
        """The parse error of the first editor the matrices typed last need, if one holds an error."""
        names = ("X",) if self.last_matrix == "x" else ("Q", "K", "V")
        return next((self._errors[n] for n in names if n in self._errors), None)

    def _status(self) -> tuple[str, bool]:
        """The line over the editors: a model reading the sentence instead, the first error, the shapes clash, or
        ✓ with the shapes."""
        if self.model_mode:
            return _("a model reads the sentence: these matrices are kept for the variants (model pane → "
                     "variants)"), True
        failed = self.first_error()
        if failed is not None:
            return f"✗ {failed}", False
        names = ("X",) if self.last_matrix == "x" else ("Q", "K", "V")
        parsed = [self._parsed[n] for n in names]
        if any(p is None for p in parsed):
            if all(p is None for p in parsed):
                return _("type Q, K, V, or X (token vectors) for any variant"), True
            missing = ", ".join(n for n, p in zip(names, parsed) if p is None)
            return _("✗ still to type: {names}").format(names=missing), False
        shapes = ", ".join(f"{n} {len(p.rows)}×{len(p.rows[0])}" for n, p in zip(names, parsed) if p is not None)
        if self.last_matrix == "qkv":
            if self.multihead:
                return "✗ " + _("this variant projects Q, K and V itself: type X (token vectors)"), False
            q, k, v = (p.rows for p in parsed if p is not None)
            try:
                check_qkv_shapes((len(q), len(q[0])), (len(k), len(k[0])), (len(v), len(v[0])), self.same_width)
            except InputError as exc:
                return f"✗ {exc}", False
        return "✓ " + shapes, True

    def refresh_status(self) -> None:
        """Check again after the variant changed (what fits together depends on it)."""
        self._show_status(*self._status())

    def _show_status(self, text: str, ok: bool) -> None:
        """One always-visible line for the editors, so an error below the fold is not missed."""
        status = self.query_one("#matrix-status", Label)
        status.update(Text(text))
        status.set_class(not ok, "-error")

    def matrix_source(self) -> MatrixInput | XInput | None:
        """The matrices typed last as an input (X, or Q/K/V), or None while one needed is invalid or empty."""
        if self.last_matrix == "x":
            x = self._parsed["X"]
            return None if x is None else XInput(x.rows, x.labels("x"))
        q, k, v = (self._parsed[n] for n in "QKV")
        if q is None or k is None or v is None:
            return None
        return MatrixInput(q.rows, k.rows, v.rows, q.labels("q"), k.labels("k") or v.labels("k"))

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        if event.option.id:
            self.post_message(SampleChosen(event.option.id))
