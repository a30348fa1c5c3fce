"""From given options to a variant VariantAsk, every option accounted for: the command line's and the API's.

An option that does not apply to what was asked is an error naming it, never dropped:
`--heads` for `dot`, `--mask` for a model. The options arrive as a namespace (argparse's,
or the API's keywords after `ask.options` has checked them); a model run is built from
the same namespace by `ask.model_request`.
"""

from __future__ import annotations

import argparse

from attn_tui.ask.applies import not_applying
from attn_tui.ask.inputs import Parsed, parse_rows
from attn_tui.ask.options import SETTINGS
from attn_tui.ask.settings import MatrixInput, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.ask.variants import VARIANTS
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import Join, Msg, Plural
from attn_tui.io.files import check_text, read_stdin, read_text

# The options of the attention variants alone: every setting but the device (a model reads it too), and the mask file.
VARIANT_OPTIONS = tuple(n for name in SETTINGS if name != "device"
                        for n in ((name, "mask_file") if name == "mask" else (name,)))
MATRIX_OPTIONS = ("q", "k", "v", "x")
MAX_TEXT = 1_000_000  # characters of a sentence; the token budget refuses far less


def flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def given_options(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    return [name for name in names if _set(getattr(args, name, None))]


def _set(value: object) -> bool:
    """An option counts as given unless it is absent (None) or an unset flag (False); 0 is given."""
    return value is not None and value is not False


def refuse(args: argparse.Namespace, names: tuple[str, ...], reason: Msg) -> None:
    given = given_options(args, names)
    if given:
        raise ConfigError(Plural("{options} does not apply {reason}", "{options} do not apply {reason}",
                                 options=" ".join(flag(n) for n in given), n=len(given), reason=reason))


class Reader:
    """Reads the files an invocation names; standard input may be read once."""

    def __init__(self) -> None:
        self.stdin_used: list[str] = []

    def text(self, path: str, what: str | Msg) -> str:
        if path == "-":
            self.stdin_used.append(str(what))
            if len(self.stdin_used) > 1:
                raise InputError(Msg("only one input can come from standard input ({inputs} asked)",
                                     inputs=", ".join(self.stdin_used)))
            return read_stdin(what)
        return read_text(path, what)

    def matrix(self, path: str, name: str | Msg) -> Parsed:
        """A matrix (and its row names) from a file; parse errors name line and column, never the file's content."""
        where = Msg("standard input") if path == "-" else path
        return parse_rows(self.text(path, name), Join(" ", name, Join("", "(", where, ")")), echo=False)


def sentence(text: str, what: str = "--text") -> str:
    check_text(text, what)
    if len(text) > MAX_TEXT:
        raise InputError(Msg("{what} is {n} characters long; attn-tui reads at most {max}", what=what,
                             n=f"{len(text):,}", max=f"{MAX_TEXT:,}"))
    return text


def variant_ask(args: argparse.Namespace, reader: Reader | None = None) -> VariantAsk | None:
    """The VariantAsk the options describe; None when no input was named (the app's default sample)."""
    reader = reader or Reader()
    refuse(args, ("layer", "pad_to", "target", "teacher_forcing"), Msg("to the attention variants (only to "
                                                                         "--model)"))
    given = [name for name in ("text", "sample", "q", "k", "v", "x") if getattr(args, name) is not None]
    base: VariantAsk | None = None
    if args.sample is not None:
        from attn_tui.ask.samples import get_sample

        if len(given) > 1:
            raise InputError(Msg("--sample cannot be combined with --text, --q/--k/--v or --x"))
        base = get_sample(args.sample).request
    elif args.text is not None:
        if len(given) > 1:
            raise InputError(Msg("--text cannot be combined with --q/--k/--v or --x"))
        base = VariantAsk(SentenceInput(sentence(args.text)))
    elif args.x is not None:
        if len(given) > 1:
            raise InputError(Msg("--x cannot be combined with --q/--k/--v"))
        x = reader.matrix(args.x, "X")
        base = VariantAsk(XInput(x.rows, x.labels("x")))
    elif any(getattr(args, n) is not None for n in ("q", "k", "v")):
        missing = [f"--{n}" for n in ("q", "k", "v") if getattr(args, n) is None]
        if missing:
            raise InputError(Msg("typed matrices need --q, --k and --v; missing {missing}",
                                 missing=", ".join(missing)))
        q, k, v = (reader.matrix(getattr(args, n), n.upper()) for n in "qkv")
        base = VariantAsk(MatrixInput(q.rows, k.rows, v.rows, q.labels("q"), k.labels("k") or v.labels("k")))
    if base is None:
        if given_options(args, VARIANT_OPTIONS):
            return _default_with(args, reader)
        return None
    return _with_options(args, base, reader)


def _default_with(args: argparse.Namespace, reader: Reader) -> VariantAsk:
    """The app's default sample with the given settings applied (`attn-tui --variant dot`)."""
    from attn_tui.ask.samples import DEFAULT_SAMPLE, get_sample

    return _with_options(args, get_sample(DEFAULT_SAMPLE).request, reader)


def _with_options(args: argparse.Namespace, base: VariantAsk, reader: Reader) -> VariantAsk:
    overrides = {name: getattr(args, name) for name in SETTINGS if getattr(args, name, None) is not None}
    settings: Settings = base.settings.replace(**overrides)
    custom = base.custom_mask
    if args.mask_file is not None:
        custom = reader.matrix(args.mask_file, Msg("the mask")).rows
    request = VariantAsk(base.source, settings, custom)
    check_applies(args, request)
    return request


def check_applies(args: argparse.Namespace, request: VariantAsk) -> None:
    """Refuse each given option that would change nothing for this variant and input."""
    s = request.settings
    if request.source.typed and VARIANTS[s.variant].takes_x:
        raise InputError(Msg("{variant} projects Q, K and V itself: give --x or --text instead of --q/--k/--v",
                             variant=s.variant))
    named = {name for name in SETTINGS if _set(getattr(args, name, None))}
    for problem in not_applying(request, named | ({"head"} if getattr(args, "head", None) is not None else set())):
        raise ConfigError(problem)
