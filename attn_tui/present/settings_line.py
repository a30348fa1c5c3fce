"""The settings a trace was computed with that differ from the defaults, named in one line for every stage.

A learner who loads an exercise after another must see at a glance when something
other than the input shapes its numbers (a mask left on, a fill of -1e9, a temperature):
the stage bar and the CLI table both print this line, so it cannot be missed or disagree.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.ask.applies import applicable
from attn_tui.ask.options import SETTINGS
from attn_tui.ask.settings import DEFAULT_DIM, MatrixInput, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.i18n import Plural, _, pgettext

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace

# The model pane's row labels (context "setting"), so the line reads like the pane. Left out: the variant (the
# formula and the stage titles name it), what a custom mask means (named with the mask) and what the stage names
# already show (`in_summary`).
LABELS = {name: option.label for name, option in SETTINGS.items()
          if option.label and option.in_summary and name not in ("variant", "mask_means")}
DEFAULTS = Settings()


def changed_settings(settings: Settings, source: SentenceInput | MatrixInput | XInput,
                     custom_mask: bool = False, by_hand: bool = False) -> list[tuple[str, str]]:
    """(label, value) of each setting that differs from its default and changes something for this input.

    A setting that does nothing here (a window without a sliding mask, a seed for typed
    Q, K, V) is left out: it cannot have changed the numbers, and naming it would send
    the reader looking for an effect that is not there. A sentence's dim left unset is
    DEFAULT_DIM, so a request that names that width (a sample's `dim = 8`) changes nothing.
    A custom mask is named for where it came from: a file or sample ("custom"), or
    cells toggled with `x` ("cells masked by hand").
    """
    applying = applicable(VariantAsk(source, settings))
    found: list[tuple[str, str]] = []
    for name, value in settings.as_dict().items():
        default = DEFAULT_DIM if name == "dim" and source.embedded else DEFAULTS.value(name)
        if name not in LABELS or name not in applying or value in (default, DEFAULTS.value(name)):
            continue
        found.append((pgettext("setting", LABELS[name]), _value(value)))
    if custom_mask:
        mask = LABELS["mask"]
        found.append((pgettext("setting", mask), _("cells masked by hand") if by_hand else pgettext("mask", "custom")))
    return found


def custom_mask_note(request: VariantAsk) -> str:
    """What a custom mask adds to the mask kind chosen ("" without one): how many cells it blocks, and how it was
    made (by hand with `x`, or typed as one row for every query)."""
    mask = request.custom_mask
    if mask is None:
        return ""
    blocked_value = 1.0 if request.settings.mask_means == "block" else 0.0
    blocked = sum(value == blocked_value for row in mask for value in row)
    if request.mask_by_hand:
        return str(Plural("+ {n} cell masked by hand (x on the masked stage)",
                          "+ {n} cells masked by hand (x on the masked stage)", n=blocked))
    if len(mask) == 1:  # one row: a key blocked for every query
        return str(Plural("+ a custom mask: {n} key blocked for every query",
                          "+ a custom mask: {n} keys blocked for every query", n=blocked))
    return str(Plural("+ a custom mask: {n} cell blocked", "+ a custom mask: {n} cells blocked", n=blocked))


def _value(value: object) -> str:
    if isinstance(value, bool):
        return pgettext("setting", "on") if value else pgettext("setting", "off")
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def settings_line(trace: Trace) -> str:
    """'≠ defaults: mask causal · fill -1e9' for a trace of the attention variants; '' when all are defaults."""
    settings = trace.meta.settings_of_variants
    if settings is None:
        return ""  # a model's settings are its own
    inputs = trace.inputs
    source: SentenceInput | MatrixInput | XInput = (
        MatrixInput([], [], []) if "Q" in inputs else XInput([]) if "X" in inputs else SentenceInput(""))
    custom = trace.mask is not None and trace.mask.custom is not None
    changed = changed_settings(settings, source, custom, custom and trace.mask is not None and trace.mask.by_hand)
    if not changed:
        return ""
    return _("≠ defaults: {settings}").format(settings=" · ".join(f"{label} {value}" for label, value in changed))
