"""The model pane: every setting of the computation, one compact line each.

It holds no trace: the app hands it settings (and the device actually used) and it
posts `SettingsEdited` whenever the person changes something valid.
"""

from __future__ import annotations

from dataclasses import replace

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Checkbox, Input, Label, Select

from attn_tui.core.settings import VARIANT_NAMES, Settings
from attn_tui.tui.messages import SettingsEdited

MASKS = ("none", "causal", "padding", "causal+padding")
FILLS = ("-inf", "-1e9")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "float64", "float16", "bfloat16")
_SELECTS = {"variant": VARIANT_NAMES, "mask": MASKS, "mask_fill": FILLS, "device": DEVICES, "dtype": DTYPES}
_NUMBERS = {"dim": "integer", "heads": "integer", "seed": "integer", "temperature": "number"}


class ModelPane(VerticalScroll, can_focus=False, inherit_bindings=False):
    """Variant, sizes, mask, positions, temperature, seed, device and dtype."""

    def __init__(self, settings: Settings, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.settings = settings

    def compose(self) -> ComposeResult:
        s = self.settings
        yield Label("Model", classes="pane-title")
        yield from self._row("variant", Select([(v, v) for v in VARIANT_NAMES], value=s.variant,
                                               allow_blank=False, compact=True, id="set-variant"))
        yield from self._row("dim", Input(self._dim_text(s), type="integer", compact=True, id="set-dim",
                                          placeholder="8"))
        yield from self._row("heads", Input(str(s.heads), type="integer", compact=True, id="set-heads"))
        yield from self._row("head", Label("0 of 1  [ ]", id="head-view"))
        yield from self._row("mask", Select([(m, m) for m in MASKS], value=s.mask, allow_blank=False,
                                            compact=True, id="set-mask"))
        yield from self._row("fill", Select([(f, f) for f in FILLS], value=s.mask_fill, allow_blank=False,
                                            compact=True, id="set-mask_fill"))
        yield from self._row("pos enc", Checkbox("sinusoidal", s.positional, compact=True, id="set-positional"))
        yield from self._row("temp", Input(f"{s.temperature:g}", type="number", compact=True,
                                           id="set-temperature"))
        yield from self._row("seed", Input(str(s.seed), type="integer", compact=True, id="set-seed"))
        yield from self._row("device", Select([(d, d) for d in DEVICES], value=s.device, allow_blank=False,
                                              compact=True, id="set-device"))
        yield from self._row("used", Label("—", id="device-used"))
        yield from self._row("dtype", Select([(d, d) for d in DTYPES], value=s.dtype, allow_blank=False,
                                             compact=True, id="set-dtype"))
        yield Label("", id="settings-error")

    @staticmethod
    def _row(label: str, control) -> ComposeResult:
        with Horizontal(classes="setting"):
            yield Label(label, classes="setting-label")
            yield control

    @staticmethod
    def _dim_text(s: Settings) -> str:
        return "" if s.dim is None else str(s.dim)

    def show(self, settings: Settings) -> None:
        """Put settings into the controls without posting edits back (a sample was loaded)."""
        self.settings = settings
        with self.prevent(Select.Changed, Input.Changed, Checkbox.Changed):
            for name in _SELECTS:
                self.query_one(f"#set-{name}", Select).value = getattr(settings, name)
            self.query_one("#set-dim", Input).value = self._dim_text(settings)
            self.query_one("#set-heads", Input).value = str(settings.heads)
            self.query_one("#set-temperature", Input).value = f"{settings.temperature:g}"
            self.query_one("#set-seed", Input).value = str(settings.seed)
            self.query_one("#set-positional", Checkbox).value = settings.positional
        self.query_one("#settings-error", Label).update("")

    def show_view(self, head: int, heads: int, device_used: str) -> None:
        """The head in view and the device the last computation actually ran on."""
        self.query_one("#head-view", Label).update(f"{head} of {heads}  [ ]")
        self.query_one("#device-used", Label).update(device_used)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        name = (event.select.id or "").removeprefix("set-")
        if name in _SELECTS and event.value != getattr(self.settings, name):
            self._edited(replace(self.settings, **{name: event.value}))

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        if event.value != self.settings.positional:
            self._edited(replace(self.settings, positional=event.value))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        name = (event.input.id or "").removeprefix("set-")
        if name not in _NUMBERS:
            return
        error, value = self._parse(name, event.value)
        self.query_one("#settings-error", Label).update(error)
        if not error and value != getattr(self.settings, name):
            self._edited(replace(self.settings, **{name: value}))

    @staticmethod
    def _parse(name: str, text: str) -> tuple[str, object]:
        """(error, value); an empty dim means the default size. Bad text is kept, not applied."""
        text = text.strip()
        if name == "dim" and text == "":
            return "", None
        try:
            value: object = float(text) if name == "temperature" else int(text)
        except ValueError:
            return f"{name}: {text!r} is not a number", None
        if name in ("dim", "heads") and value < 1:  # type: ignore[operator]
            return f"{name} must be at least 1", None
        if name == "temperature" and not 0 < value < float("inf"):  # type: ignore[operator]
            return "temperature must be a positive number", None
        return "", value

    def _edited(self, settings: Settings) -> None:
        self.settings = settings
        self.post_message(SettingsEdited(settings))
