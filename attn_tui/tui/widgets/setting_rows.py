"""The model pane's setting rows, read from the option schema: their labels, their order, and how a typed value is read.

Textual-free, so the parsing is tested as a function: the pane shows what `parse_field`
says, and the range it checks is the schema's (`ask/options.py`), read at the moment a
key is typed, the same range the command line, the API, the session and the budget use.
"""

from __future__ import annotations

from attn_tui.ask.options import SETTINGS, VARIANT_OWN, Option
from attn_tui.ask.settings import Settings
from attn_tui.i18n import NP_, _, pgettext

# The rows that are no setting: the model choice and what belongs to a real model (context "setting").
MODEL_LABELS = {"model": NP_("setting", "model"), "path": NP_("setting", "path"), "layer": NP_("setting", "layer"),
                "head": NP_("setting", "head"), "target": NP_("setting", "target"),
                "forcing": NP_("setting", "forcing"), "used": NP_("setting", "used")}
# Each row's label, by the setting it shows (translated with the context "setting").
LABELS = MODEL_LABELS | {name: option.label for name, option in SETTINGS.items()}
# The pane's order, top to bottom: the shape of the run, each variant's own settings (in the variants' order), the
# mask, the rest, and the 2025 mechanisms a score-based variant may add. The model's own rows come after the
# variants' own, the device actually used after `device`.
ORDER = ("variant", "projection", "bias", "dim", "heads", *VARIANT_OWN, "mask", "window", "pad_keys", "mask_fill",
         "mask_means", "positional", "temperature", "seed", "device", "dtype", "softcap", "qk_norm", "gate")
MODEL_ROWS_AFTER = ORDER[ORDER.index("mask") - 1]  # the last of the variants' own rows (or heads)
CAPTIONS = {name: option.caption for name, option in SETTINGS.items() if option.caption}  # beside its box
OWN = tuple(name for name, option in SETTINGS.items() if option.situational)  # shown only where they apply
GREYABLE = tuple(name for name, option in SETTINGS.items() if not option.always)  # greyed out where they change nothing
INPUTS = tuple(name for name, option in SETTINGS.items() if option.row == "input")
SELECTS = tuple(name for name, option in SETTINGS.items() if option.row == "select")


def row_classes(option: Option) -> str:
    """The CSS classes of a setting's row: hidden while a model is chosen unless a model reads it too."""
    return " ".join(([] if option.for_models else ["variant-only"]) + (["own"] if option.situational else []))


def number_text(settings: Settings, name: str) -> str:
    """A number field's text: '' for the default size, floats without a trailing '.0'."""
    value = settings.value(name)
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def parse_field(name: str, text: str) -> tuple[str, object]:
    """(error, value) for a number field; an empty optional field (dim) means the default size. Bad text is kept by
    the pane, not applied, and the error names the row as the pane labels it."""
    option = SETTINGS[name]
    text = text.strip()
    if option.optional and text == "":
        return "", None
    label = pgettext("setting", option.label)
    try:
        value: float = float(text) if option.kind is float else int(text)
    except ValueError:
        return _("{setting}: {text} is not a number").format(setting=label, text=repr(text[:30])), None
    if option.holds(value):
        return "", value
    if option.pane_refusal:
        return _(option.pane_refusal).format(setting=label), None
    if option.low is not None and value < option.low:
        if option.low == 0:
            return _("{setting} must be 0 or more").format(setting=label), None
        return _("{setting} must be at least 1").format(setting=label), None
    return _("{setting} must be at most {n}").format(setting=label, n=int(option.high or 0)), None
