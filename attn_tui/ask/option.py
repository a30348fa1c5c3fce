"""One setting's declaration (`Option`): its type, range or choices, default, help, flag and pane row.

Torch-free and argparse-free, so a variant's package can declare the settings only it reads beside its
math (`attention/variants/<name>/__init__.py`) and `ask.options` gathers them with the shared ones.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Literal

from attn_tui.i18n import _

MAX_HEADS = 64  # more heads than this are no longer something to look at one by one
WHOLE = re.compile(r"[+-]?[0-9]+")  # plain ASCII digits: no '1_0', no other scripts' digits

Row = Literal["select", "input", "checkbox", ""]


class OptionError(ValueError):
    """A value an option cannot take; the message says why (in the language on show)."""


@dataclass(frozen=True)
class Option:
    """One setting: what it holds, what it may be, what it is unless given, and how each front end offers it.

    `low`/`high` bound a number (inclusive; `above` makes `low` exclusive and the number finite);
    `refusal` is the command line's words for a float out of range, `pane_refusal` the model
    pane's (for an int the pane says "at least 1", "0 or more" or "at most N" itself).
    """

    name: str
    kind: type  # int, float, bool or str
    default: object
    help: str | None = None  # marked with N_: translated where it is shown
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    above: bool = False
    optional: bool = False  # None is a value: the default size (dim)
    metavar: str | None = None
    label: str = ""  # the model pane's row label, context "setting" (NP_); "" for no row
    row: Row = ""
    always: bool = False  # applies to every variant on every input: never greyed out
    situational: bool = False  # one variant's (or one mask's) knob: its row shows only where it applies
    for_models: bool = False  # a real model reads it too: its row stays when a model is chosen
    refusal: str = ""
    pane_refusal: str = ""
    caption: str = ""  # marked with N_: a checkbox row's words beside its box
    in_summary: bool = True  # named in the `≠ defaults` line when it differs (not where the stage names show it)

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def read(self, text: str) -> object:
        """The value `text` stands for, checked against the kind, the range and the choices; OptionError if none."""
        if self.kind is int:
            if not WHOLE.fullmatch(text.strip()):
                raise OptionError(_("expected a whole number, got {text}").format(text=repr(text[:30])))
            value = int(text)
            assert self.low is not None and self.high is not None  # every whole number is bounded both ways
            low, high = int(self.low), int(self.high)
            if not low <= value <= high:
                raise OptionError(_("must be between {lo} and {hi}, got {text}").format(
                    lo=f"{low:,}", hi=f"{high:,}", text=text[:30]))
            return value
        if self.kind is float:
            try:
                number = float(text)
            except ValueError:
                raise OptionError(_("expected a number, got {text}").format(text=repr(text[:30]))) from None
            if not self.holds(number):
                raise OptionError(_(self.refusal).format(text=text[:30]))
            return number
        return text  # a choice is checked by each front end in its own words (argparse's, the API's)

    def holds(self, value: float) -> bool:
        """Whether a number lies in this option's range."""
        if self.above:
            return math.isfinite(value) and value > (self.low or 0) and (self.high is None or value <= self.high)
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def whole(name: str, default: int | None, low: int, high: int, metavar: str, label: str, help: str | None = None,
         *, optional: bool = False, situational: bool = False, pane_refusal: str = "") -> Option:
    return Option(name, int, default, help, low=low, high=high, metavar=metavar, label=label, row="input",
                  optional=optional, situational=situational, pane_refusal=pane_refusal)


def choice(name: str, names: tuple[str, ...], label: str, help: str | None = None, *, always: bool = False,
            situational: bool = False) -> Option:
    return Option(name, str, names[0], help, choices=names, label=label, row="select", always=always,
                  situational=situational)
