"""The model pane: which model, and every setting of the computation, one compact line each.

It holds no trace: the app hands it settings (and the device actually used) and it
posts `SettingsEdited` whenever the person changes something valid, `ModelChosen` when a
real or trained model is picked, `TargetEdited` for the seq2seq target. Rows that do not
apply to the current kind of model are hidden by CSS classes, not removed; settings that
change nothing for the variant on this input (heads for scaled_dot) are greyed out; the rows
of one variant's own knob (kv heads, rope base, tile) and the window of a sliding mask are
shown only where they apply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Checkbox, Input, Label, ProgressBar, Select, Static

from attn_tui.ask.models import DATE_MODELS, MODEL_NAMES, TRANSFORMER_DATE_MODELS
from attn_tui.ask.options import DEFAULT_DIM, SETTINGS
from attn_tui.ask.settings import ModelAsk, Settings, VariantAsk
from attn_tui.i18n import N_, _, pgettext
from attn_tui.present.recorded import RecordedRow
from attn_tui.present.settings_line import custom_mask_note
from attn_tui.tui.classes import set_classes
from attn_tui.tui.load_phase import PhaseClock
from attn_tui.tui.messages import ModelChosen, SettingsEdited, SettingsRejected, TargetEdited
from attn_tui.tui.path_completion import Completion
from attn_tui.tui.served import served
from attn_tui.tui.widgets.echo import EchoInput
from attn_tui.tui.widgets.echo import shown as drawn
from attn_tui.tui.widgets.path_input import PathInput, PathSuggester, model_hint
from attn_tui.tui.widgets.setting_rows import (
    CAPTIONS,
    INPUTS,
    MODEL_ROWS_AFTER,
    ORDER,
    SELECTS,
    number_text,
    parse_field,
    row_classes,
)
from attn_tui.tui.widgets.setting_rows import GREYABLE as GREYABLE
from attn_tui.tui.widgets.setting_rows import LABELS as LABELS
from attn_tui.tui.widgets.toggle import ShapeCheckbox

if TYPE_CHECKING:
    from textual.timer import Timer

    from attn_tui.sources.progress import Progress

VARIANTS = "variants"  # the model choice that means: no model, the attention variants
OTHER = "other"  # the model choice that means: the path or id typed below
RECORDED = "recorded"  # the model choice while `attn-tui trace` shows the user's code: offered only then
MODELS = MODEL_NAMES
SEQ2SEQ = tuple(DATE_MODELS)

LABEL_CELLS = 9  # the setting rows' label column (the recorded rows' too)
COUNTED = ("layer", "head")  # rows that show an index: counted from 0, as torch (and the CLI's --layer, --head)
FROM_ZERO = N_("counted from 0, as torch indexes; press { } and [ ] to move")


def counted_view(index: int, count: int, keys: str) -> Text:
    """'0 of 4   press [ ]': the index, then the shortcut keys that move it, dim and after "press", so that `[ ]` is
    never read as an unticked checkbox, nor "key" as an attention key."""
    text = Text(index_of(index, count))
    text.append("   " + _("press {keys}").format(keys=keys), "dim")
    return text


def index_of(index: int, count: int) -> str:
    """'0 of 2': an index counted from 0 and how many there are (never '0 / 2', which reads as a fraction)."""
    return _("{index} of {count}").format(index=index, count=count)


def _model_options(recorded: bool = False) -> list[tuple[str, str]]:
    return [*([(_("recorded code"), RECORDED)] if recorded else []), (_("variants"), VARIANTS),
            *((m, m) for m in MODELS), (_("path or id…"), OTHER)]


class ModelPane(VerticalScroll, can_focus=False, inherit_bindings=False):
    """Variant, sizes, mask, positions, temperature, seed, device and dtype."""

    DEFAULT_CSS = """
    ModelPane { padding: 0 1 0 0; scrollbar-size-vertical: 1; }
    ModelPane .pane-title { text-style: bold; color: $accent; }
    ModelPane .setting { height: 1; }
    ModelPane .setting-label { width: 9; color: $text-muted; }
    ModelPane .setting.-unused .setting-label { color: $text-disabled; text-style: dim; }
    Screen.-narrow ModelPane .setting-label { width: 8; }
    Screen.-narrow ModelPane #path-hint { padding: 0 0 0 8; }
    ModelPane .setting Select, ModelPane .setting Input, ModelPane .setting Checkbox,
    ModelPane .setting .value { width: 1fr; }
    ModelPane #settings-error { color: $error; height: auto; }
    ModelPane #model-status { display: none; width: 100%; height: auto; max-height: 2; color: $text-muted; }
    ModelPane #model-status.-shown { display: block; }
    ModelPane #load-progress { display: none; height: auto; }
    ModelPane #load-progress.-shown { display: block; }
    ModelPane #load-bar { width: 100%; }
    ModelPane #load-bar Bar { width: 1fr; }
    ModelPane #load-bar Bar > .bar--indeterminate { color: $accent; }  /* Textual's red reads as an error */
    ModelPane #load-bar.-indeterminate PercentageStatus { display: none; }
    ModelPane #load-phase { width: 100%; height: auto; max-height: 2; color: $text-muted; }
    ModelPane #path-hint { display: none; width: 100%; height: auto; padding: 0 0 0 9; color: $text-success; }
    ModelPane.-other #path-hint.-shown { display: block; }
    /* Rows that apply to one kind of model only. */
    ModelPane .other-only, ModelPane .transformer-only, ModelPane .seq2seq-only { display: none; }
    ModelPane.-other .other-only, ModelPane.-transformer .transformer-only,
    ModelPane.-seq2seq .seq2seq-only { display: block; }
    ModelPane.-model .variant-only, ModelPane.-seq2seq .head-row { display: none; }
    ModelPane.-layered .head-row, ModelPane.-layered .transformer-only { display: block; }
    ModelPane .setting.own.-unused { display: none; }
    /* A recorded program on show: what was recorded, in place of the variants' settings. */
    ModelPane #custom-mask { display: none; width: 100%; height: auto; padding: 0 0 0 9; color: $warning; }
    ModelPane #custom-mask.-shown { display: block; }
    ModelPane.-model #custom-mask, ModelPane.-recorded #custom-mask { display: none; }
    ModelPane #recorded { display: none; height: auto; margin: 0 0 1 0; }
    ModelPane.-recorded #recorded { display: block; }
    ModelPane.-recorded .variant-only, ModelPane.-recorded #settings-error { display: none; }
    """

    def __init__(self, settings: Settings, applicable: frozenset[str], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.settings = settings
        self.applicable = applicable  # the settings that change something: composed greyed out or not, not restyled
        self.choice = VARIANTS  # the model choice on show; a Select echoing it is no edit
        self.refused: dict[str, str] = {}  # number fields whose text is refused, and why: no edit applies till fixed
        self.held = False  # settings not yet posted: edited, or dropped in flight, while a field was refused
        self.layer_at = self.head_at = (0, 1)  # (index, count) on show: read again after `t`
        self.recorded: list[RecordedRow] | None = None  # what a recorded program on show is, else None
        self.progress: Progress | None = None  # the load's phase on show, None: no load is being told
        self.phase_clock = PhaseClock()
        self.ticking: Timer | None = None  # while a load is told: its time taken is said again each second
        self.custom_mask: VariantAsk | None = None  # the variants' ask whose custom mask the pane last told
        self.path_is_model = False  # the path typed names a model folder (a config.json is in it)
        self.refused_path: str | None = None  # the path whose model could not be opened last

    def compose(self) -> ComposeResult:
        yield Label(_("Model"), classes="pane-title", id="model-title")
        yield from self._row("model", Select(_model_options(), value=VARIANTS, allow_blank=False, compact=True,
                                             id="set-model"))
        yield from self._row("path", PathInput(placeholder=_("folder or cached id, ⏎"), compact=True,
                                               suggester=None if served() else PathSuggester(self._path_completed),
                                               id="set-model-path"),
                             "other-only")
        yield Label("", id="path-hint")
        yield Label("", id="model-status")
        with Vertical(id="load-progress"):
            yield ProgressBar(total=None, show_eta=False, id="load-bar")
            yield Label("", id="load-phase")
        yield Static("", id="recorded")
        for name in ORDER:
            yield from self._row(name, self._control(name), row_classes(SETTINGS[name]))
            if name == "mask":
                yield Label("", id="custom-mask")  # the mask in force besides the kind chosen above
            if name == MODEL_ROWS_AFTER:
                yield from self._model_rows()
            elif name == "device":
                yield from self._row("used", Label("—", id="device-used", classes="value"))
        yield Label("", id="settings-error")

    def _row(self, name: str, control: Widget, classes: str = "") -> ComposeResult:
        unused = name in GREYABLE and name not in self.applicable
        control.set_reactive(Widget.disabled, unused)  # before mount: no watcher, no restyle
        with Horizontal(classes=f"setting {classes}{' -unused' if unused else ''}".strip(), id=f"row-{name}") as row:
            if name in COUNTED:
                row.tooltip = _(FROM_ZERO)
            yield Label(pgettext("setting", LABELS[name]), classes="setting-label", id=f"label-{name}")
            yield control

    def _control(self, name: str) -> Widget:
        """A setting's control, as the schema declares its row: a menu of its choices, a number field or a box."""
        option, value, ident = SETTINGS[name], self.settings.value(name), f"set-{name}"
        if option.row == "select":
            return Select([(c, c) for c in option.choices or ()], value=value, allow_blank=False, compact=True,
                          id=ident)
        if option.row == "checkbox":
            return ShapeCheckbox(_(CAPTIONS[name]), value, compact=True, id=ident)
        return Input(number_text(self.settings, name), type="number" if option.kind is float else "integer",
                     compact=True, id=ident, placeholder=str(DEFAULT_DIM) if name == "dim" else "—" if option.optional
                     else "")

    def _model_rows(self) -> ComposeResult:
        """A real model's own rows: its layer and head in view, a date model's target and teacher forcing."""
        yield from self._row("layer", Label(counted_view(*self.layer_at, "{ }"), id="layer-view", classes="value"),
                             "transformer-only")
        yield from self._row("head", Label(counted_view(*self.head_at, "[ ]"), id="head-view", classes="value"),
                             "head-row")
        yield from self._row("target", EchoInput(placeholder="2026-11-22", compact=True, id="set-target"),
                             "seq2seq-only")
        yield from self._row("forcing", ShapeCheckbox(_("teacher"), False, compact=True, disabled=True,
                                                      id="set-teacher"), "seq2seq-only")

    def relabel(self) -> None:
        """Every label in the language on show (after `t`)."""
        for name, label in LABELS.items():
            self.query_one(f"#label-{name}", Label).update(pgettext("setting", label))
        self.query_one("#model-title", Label).update(_("Model"))
        self.show_layer(*self.layer_at)
        self.query_one("#head-view", Label).update(counted_view(*self.head_at, "[ ]"))
        for name in COUNTED:
            self.query_one(f"#row-{name}").tooltip = _(FROM_ZERO)
        self.query_one("#set-teacher", Checkbox).label = _("teacher")
        for name, caption in CAPTIONS.items():
            self.query_one(f"#set-{name}", Checkbox).label = _(caption)
        self.query_one("#set-model-path", Input).placeholder = _("folder or cached id, ⏎")
        self._show_path_hint(self.path_is_model)
        self.show_progress(self.progress)
        self._draw_recorded()
        if self.custom_mask is not None:
            self.show_custom_mask(self.custom_mask)
        model = self.query_one("#set-model", Select)
        with self.prevent(Select.Changed):
            model.set_options(_model_options(self.recorded is not None))
            model.value = OTHER if self.choice != OTHER else VARIANTS  # a change, so the shown label is redrawn
            model.value = self.choice

    def show_custom_mask(self, request: VariantAsk) -> None:
        """Under the mask row: a custom mask in force besides the kind the row names ("mask none" alone would hide
        it), with how many cells it blocks."""
        self.custom_mask = request
        said, label = custom_mask_note(request), self.query_one("#custom-mask", Label)
        label.set_class(bool(said), "-shown")
        label.update(said)

    def show_applicable(self, names: frozenset[str]) -> None:
        """Grey out (and disable) the settings that change nothing for this variant on this input."""
        for name in GREYABLE:
            unused = name not in names
            self.query_one(f"#row-{name}").set_class(unused, "-unused")
            self.query_one(f"#set-{name}").disabled = unused

    def show_model(self, model: ModelAsk | None) -> None:
        """Put a model choice into the controls without posting it back; rows follow its kind."""
        name = None if model is None else model.name
        choice = VARIANTS if name is None else (name if name in MODELS else OTHER)
        with self.prevent(Select.Changed, Input.Changed, Checkbox.Changed):
            self.query_one("#set-model", Select).value = choice
            if choice == OTHER:
                self.query_one("#set-model-path", Input).value = name or ""
            if model is not None and name in SEQ2SEQ:
                self.query_one("#set-target", Input).value = model.target or ""
                teacher = self.query_one("#set-teacher", Checkbox)
                teacher.value = model.teacher_forcing
                teacher.disabled = not model.target
        self._set_kind(choice)

    def _set_kind(self, choice: str) -> None:
        self.choice = choice
        set_classes(self, {"-model": choice != VARIANTS, "-seq2seq": choice in SEQ2SEQ,
                           "-layered": choice in TRANSFORMER_DATE_MODELS,
                           "-transformer": choice not in (VARIANTS, *SEQ2SEQ), "-other": choice == OTHER})

    def show_recorded(self, rows: list[RecordedRow] | None) -> None:
        """A recorded program on show (`rows`: what it is) or not (None): its rows take the place of the variants'
        settings, which say nothing about it, and the model choice reads `recorded code` until something else is
        asked for (picking `variants` there leaves it; ctrl+z brings it back)."""
        if rows is None and self.recorded is None:
            return
        self.recorded = rows
        self.set_class(rows is not None, "-recorded")
        self._draw_recorded()
        model = self.query_one("#set-model", Select)
        with self.prevent(Select.Changed):
            model.set_options(_model_options(rows is not None))
            if rows is not None:
                self.choice = RECORDED
            elif self.choice == RECORDED:  # left by an edit, not by the model choice: the variants are on show
                self._set_kind(VARIANTS)
            model.value = self.choice

    def _draw_recorded(self) -> None:
        grid = Table.grid(padding=(0, 1))  # a long line of code wraps inside its own column, under its value
        # as wide as the setting rows' labels (9 cells with the padding), so the values line up with the rows below
        grid.add_column(style="dim", no_wrap=True, min_width=LABEL_CELLS - 1)
        grid.add_column(overflow="fold")
        for label, value in self.recorded or ():
            grid.add_row(pgettext("recorded", label), Text(str(value)))
        self.query_one("#recorded", Static).update(grid)

    def refuse_path(self, name: str) -> None:
        """`name` could not be opened: it stays in the field, and picking `path or id…` again opens the field to fix
        it instead of trying the same path again."""
        self.refused_path = name

    def _path_completed(self, value: str, completion: Completion) -> None:
        """The suggester read the path typed: say whether it names a model folder (a stale value's answer is
        dropped: the field moved on while the listing was read)."""
        if self.is_attached and self.query_one("#set-model-path", Input).value == value:
            self._show_path_hint(completion.model)

    def _show_path_hint(self, model: bool) -> None:
        self.path_is_model = model
        hint = self.query_one("#path-hint", Label)
        hint.update(model_hint(model))
        hint.set_class(model, "-shown")

    def show_progress(self, progress: Progress | None) -> None:
        """A load's bar and what it is doing now (indeterminate when how far is not known); None: gone."""
        self.progress = progress
        self.query_one("#load-progress").set_class(progress is not None, "-shown")
        if progress is None:
            self.phase_clock.reset()  # the next load's first phase counts from its own start
            if self.ticking is not None:
                self.ticking.stop()
                self.ticking = None
            return
        if self.ticking is None:
            self.ticking = self.set_interval(1.0, self._tell_phase)
        bar = self.query_one("#load-bar", ProgressBar)
        bar.set_class(not progress.total, "-indeterminate")  # its `--%` says nothing: hidden
        if progress.total:
            bar.update(total=progress.total, progress=progress.done)
        else:
            bar.update(total=None)
        self._tell_phase()

    def _tell_phase(self) -> None:
        if self.progress is not None:
            self.query_one("#load-phase", Label).update(drawn(self.phase_clock.line(self.progress)))

    def show_status(self, text: str) -> None:
        """A line under the model choice: loading, or what the model is."""
        status = self.query_one("#model-status", Label)
        status.update(drawn(text))
        status.set_class(bool(text), "-shown")

    def show_layer(self, layer: int, layers: int) -> None:
        self.layer_at = (layer, layers)
        self.query_one("#layer-view", Label).update(counted_view(layer, layers, "{ }"))

    def show(self, settings: Settings) -> None:
        """Put settings into the controls without posting edits back (a sample was loaded)."""
        self.settings = settings
        self.refused.clear()
        self.held = False
        with self.prevent(Select.Changed, Input.Changed, Checkbox.Changed):
            for name in SELECTS:
                self.query_one(f"#set-{name}", Select).value = settings.value(name)
            for name in INPUTS:
                self.query_one(f"#set-{name}", Input).value = number_text(settings, name)
            for name in CAPTIONS:
                self.query_one(f"#set-{name}", Checkbox).value = settings.value(name)
        self.query_one("#settings-error", Label).update("")

    def show_view(self, head: int, heads: int, device_used: str) -> None:
        """The head in view and the device the last computation actually ran on."""
        self.head_at = (head, heads)
        self.query_one("#head-view", Label).update(counted_view(head, heads, "[ ]"))
        self.query_one("#device-used", Label).update(Text(device_used))

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        name = (event.select.id or "").removeprefix("set-")
        if name == "model":
            if event.value != self.choice:
                self._model_picked(str(event.value))
            return
        if name in SELECTS and event.value != self.settings.value(name):
            self._edited(self.settings.replace(**{name: str(event.value)}))

    def _model_picked(self, choice: str) -> None:
        self._set_kind(choice)
        if choice == OTHER:
            path = self.query_one("#set-model-path", Input)
            if path.value.strip() and path.value.strip() != self.refused_path:
                self.post_message(ModelChosen(path.value.strip()))
            else:  # empty, or the path just refused: to be typed or fixed, not tried again as it is
                path.focus()
            return
        self.post_message(ModelChosen(None if choice == VARIANTS else choice))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if event.input.id == "set-model-path" and event.value.strip():
            self.post_message(ModelChosen(event.value.strip()))

    def _target_edited(self) -> None:
        target = self.query_one("#set-target", Input).value.strip() or None
        teacher = self.query_one("#set-teacher", Checkbox)
        with self.prevent(Checkbox.Changed):
            teacher.disabled = target is None
            if target is None:
                teacher.value = False  # teacher forcing needs a target to force
        self.post_message(TargetEdited(target, teacher.value))

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        if event.checkbox.id == "set-teacher":
            self._target_edited()
            return
        name = (event.checkbox.id or "").removeprefix("set-")
        if name in CAPTIONS and event.value != self.settings.value(name):
            self._edited(self.settings.replace(**{name: event.value}))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        name = (event.input.id or "").removeprefix("set-")
        if name == "target":
            self._target_edited()
            return
        if name == "model-path":
            if not event.value:
                self._show_path_hint(False)  # the suggester is not asked about an empty field
            return
        if name not in INPUTS:
            return
        error, value = parse_field(name, event.value)
        if error:
            self.refused[name] = error
            self.held = True  # the app drops what is in flight for this field: post again once all read right
        else:
            self.refused.pop(name, None)
        shown = error or next(iter(self.refused.values()), "")  # this field's, else another still refused
        self.query_one("#settings-error", Label).update(drawn(shown))
        self.post_message(SettingsRejected(shown))  # shown where it cannot scroll out of sight too
        if not error and value != self.settings.value(name):
            self._edited(self.settings.replace(**{name: value}))
        elif not self.refused and self.held:
            self._edited(self.settings)

    def _edited(self, settings: Settings) -> None:
        """Post `settings`, unless a field on screen is refused: then the app would compute with a value that is
        not the one shown (the last valid prefix of `100` is `10`), so the edit waits for the field."""
        self.settings = settings
        self.held = bool(self.refused)
        if not self.held:
            self.post_message(SettingsEdited(settings))
