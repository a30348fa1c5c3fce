"""Checks of what an ask holds, run before any size is read: the type and choice of every field, the shape of a matrix.

The command line's parser checks what a person types; an ask can also come from the
Python API, a saved session or a hand-edited file, where a string may stand for a
number or a row may be short. Every such ask passes here on its way in (the footprint
of a variant request, the registry for a model), so a wrong value is one clear error
naming the field, never a TypeError deep inside torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields, is_dataclass
from typing import Any

from attn_tui.ask import options
from attn_tui.errors import ConfigError, InputError, ShapeError
from attn_tui.i18n import N_, Msg, Plural
from attn_tui.io.files import QUOTE_LIMIT, quoted, short_repr

# A request is checked for the choices of each text field but two: the variant is checked against the registry where
# its sizes are read, the device where it is resolved (the API may name `cuda:1`); a saved session checks all of them.
CHECKED_ELSEWHERE = ("variant", "device")
_KINDS: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), N_("a whole number")),
    "float": ((float, int), N_("a number")),
    "bool": ((bool,), N_("true or false")),
    "str": ((str,), N_("text")),
    "None": ((type(None),), ""),
}


def _accepted(annotation: object) -> tuple[tuple[type, ...], str] | None:
    """The types a field's annotation (`int | None`, a string under postponed annotations) accepts, and its name."""
    kinds: tuple[type, ...] = ()
    name = ""
    for part in str(annotation).split("|"):
        found = _KINDS.get(part.strip())
        if found is None:
            return None  # a type this check does not know: left to the code that reads it
        kinds += found[0]
        name = name or found[1]
    return kinds, name


def check_fields(value: Any, what: str = "", choices: dict[str, tuple[str, ...]] | None = None) -> None:
    """Every field of a settings-like dataclass has its annotated type (a bool is no number) and a known choice."""
    assert is_dataclass(value)
    if choices is None:
        choices = {name: names for name, names in options.choices().items() if name not in CHECKED_ELSEWHERE}
    own = getattr(value, "own", None)
    pairs = [(f.name, getattr(value, f.name), f.type) for f in fields(value) if f.name != "own"]
    if isinstance(own, options.OwnValues):  # a variant's own settings, typed by their declarations
        pairs += [(name, found, options.SETTINGS[name].kind.__name__) for name, found in own.changed]
    for name, found, annotation in pairs:
        accepted = _accepted(annotation)
        label = f"{what}.{name}" if what else name
        if accepted is not None:
            kinds, kind = accepted
            if not isinstance(found, kinds) or (isinstance(found, bool) and bool not in kinds):
                raise ConfigError(Msg("{name} must be {kind}, not {value}", name=label, kind=Msg(kind),
                                      value=short_repr(found)))
        known = choices.get(name)
        if known is not None and isinstance(found, str) and found not in known:
            raise ConfigError(Msg("unknown {name} {value}; choose one of {names}", name=label,
                                  value=quoted(found, QUOTE_LIMIT // 2), names=", ".join(known)))


def check_ranges(value_of: Any, what: str = "", schema: dict[str, options.Option] | None = None) -> None:
    """Every number of settings (or of a model run, with `options.MODEL_OPTIONS`) lies in its declared range, the
    schema's as it is now, said as the command line says it."""
    own = getattr(value_of, "own", None)
    for option in (options.SETTINGS if schema is None else schema).values():
        value = own.get(option.name) if isinstance(own, options.OwnValues) and option.name in options.VARIANT_OWN \
            else getattr(value_of, option.name, None)
        if option.kind in (int, float) and isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                option.read(str(value))
            except options.OptionError as exc:
                raise ConfigError(Msg("{option}: {reason}", option=f"{what}.{option.name}" if what else option.name,
                                      reason=str(exc))) from None


def matrix_shape(rows: Sequence[Sequence[float]], name: str | Msg) -> tuple[int, int]:
    """(rows, width) of a matrix given as rows; every row must hold as many numbers as the first (linear time)."""
    if not isinstance(rows, Sequence) or isinstance(rows, str) or not rows:
        raise InputError(Msg("{what} has no numbers: type at least one row", what=name))
    width = -1
    for n, row in enumerate(rows, start=1):
        if not isinstance(row, Sequence) or isinstance(row, str):
            raise InputError(Msg("{name} must be a matrix: a list of rows of numbers, an array or a tensor",
                                 name=name))
        if width < 0:
            width = len(row)
            if width == 0:
                raise InputError(Msg("empty row '[]': a row needs at least one number"), source=name)
        elif len(row) != width:
            raise ShapeError(Plural("row {row} has {n} number but row 1 has {first}",
                                    "row {row} has {n} numbers but row 1 has {first}", row=n, n=len(row),
                                    first=width), source=name)
    return len(rows), width
