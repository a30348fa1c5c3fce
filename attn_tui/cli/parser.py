"""The argument parser of `attn-tui`: the app by default, and its subcommands.

The settings' flags (type, range, choices, help) are built from the one option schema,
`ask/options.py`; the flags that are no setting (--format, --out, …) are declared here.
`ask/request.py` decides which of them apply to what was asked, so that none is ever
silently dropped.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from attn_tui import __version__
from attn_tui.ask.models import MODEL_NAMES
from attn_tui.ask.options import DEVICE_NAMES, MODEL_OPTIONS, SETTINGS, Option, OptionError, help_text
from attn_tui.i18n import N_, Msg, _
from attn_tui.io.files import QUOTE_LIMIT
from attn_tui.present.text import printable

LIST_STAGES = ""  # `--stage` given without a name: list the names instead of printing stages

TOP = "app__"  # dest prefix of the options given before a subcommand (the app's own)
_ANYWHERE = ("debug", "max_memory")
FORMATS = ("table", "json", "csv", "npz")
MAX_LINE = 240  # an error line longer than this is cut: one short line, whatever the input
_QUOTED = re.compile(rf"'[^']{{{QUOTE_LIMIT},}}'")  # a long quoted value in a message (argparse quotes whole)


def one_line(message: str | Msg, limit: int = MAX_LINE) -> str:
    """A message as one line of at most `limit` characters, no quoted value longer than ~60, no control bytes."""
    text = printable(" ".join(str(message).split()))
    text = _QUOTED.sub(lambda m: m.group(0)[:QUOTE_LIMIT - 1] + "…" + m.group(0)[-1], text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def fail(message: str | Msg, prog: str = "attn-tui") -> NoReturn:
    prefix = f"{prog}: {_('error')}: "
    print(prefix + one_line(message, MAX_LINE - len(prefix)), file=sys.stderr)
    raise SystemExit(2)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        fail(message, self.prog)


def reader(option: Option) -> Callable[[str], object]:
    """An argparse type that reads text as the option schema says, with the schema's message when it cannot."""

    def parse(text: str) -> object:
        try:
            return option.read(text)
        except OptionError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = "whole number" if option.kind is int else "number"
    return parse


def _int_between(minimum: int, maximum: int = 10**9) -> Callable[[str], object]:
    """An argparse type for a flag that is no setting: a whole number in [minimum, maximum]."""
    return reader(Option("", int, None, low=minimum, high=maximum))


# A flag that is no setting (serve's --idle-minutes): a positive finite number, in the words --temperature uses.
_positive_number = reader(Option("", float, None, low=0, above=True,
                                 refusal=N_("must be a positive finite number, got {text}")))


def _add_option(group: argparse._ArgumentGroup, option: Option, prefix: str) -> None:
    """One setting's flag, exactly as the schema declares it; absent means None, so a sample's own value wins."""
    about = None if option.help is None else help_text(option)
    dest = f"{prefix}{option.name}"
    if option.kind is bool:
        group.add_argument(option.flag, action="store_const", const=True, dest=dest, help=about)
    elif option.choices is not None:
        group.add_argument(option.flag, choices=option.choices, dest=dest, help=about)
    else:
        group.add_argument(option.flag, type=reader(option), metavar=option.metavar, dest=dest, help=about)


def dash_value_flags() -> tuple[str, ...]:
    """Flags whose values may start with '-' (argparse would take `-inf` for an option)."""
    return tuple(o.flag for o in SETTINGS.values() if o.choices and any(c.startswith("-") for c in o.choices))


def _memory(text: str) -> int:
    from attn_tui.ask.budget import parse_size
    from attn_tui.errors import ConfigError

    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_common(p: argparse.ArgumentParser, prefix: str) -> None:
    p.add_argument("--max-memory", type=_memory, metavar="SIZE", dest=f"{prefix}max_memory",
                   help=_("refuse requests that would need more memory, and offload to disk the layers of a model "
                          "that does not fit (e.g. 2G; default: a share of what is free)"))
    _add_debug(p, prefix)


def _add_debug(p: argparse.ArgumentParser, prefix: str) -> None:
    p.add_argument("--debug", action="store_true", dest=f"{prefix}debug",
                   help=_("on an unexpected error, print the traceback"))


def _add_input_options(p: argparse.ArgumentParser, prefix: str = "") -> None:
    """Options shared by the app and `stages`; all default to None so a sample's own win."""
    src = p.add_argument_group(_("input (one of)"))
    src.add_argument("--text", dest=f"{prefix}text", metavar="TEXT",
                     help=_("a sentence, split on whitespace (<pad> marks padding)"))
    src.add_argument("--sample", dest=f"{prefix}sample", metavar="NAME",
                     help=_("a shipped sample by name (see `attn-tui samples`)"))
    for name, about in (("q", _("typed Q matrix (- reads standard input; rows may be named, e.g. '나는: 1 0')")),
                        ("k", _("typed K matrix")), ("v", _("typed V matrix")),
                        ("x", _("typed X matrix: token vectors (an embedding table) for any variant"))):
        src.add_argument(f"--{name}", dest=f"{prefix}{name}", metavar="FILE", help=about)
    opt = p.add_argument_group(_("settings of the attention variants"))
    for option in SETTINGS.values():
        _add_option(opt, option, prefix)
        if option.name == "mask":  # the custom mask's file beside the kinds it is ANDed with
            opt.add_argument("--mask-file", metavar="FILE", dest=f"{prefix}mask_file",
                             help=_("custom 0/1 mask, L×S or 1×S (one row per key, for every query); ANDed with "
                                    "--mask"))
    real = p.add_argument_group(_("real or trained model"))
    real.add_argument("--model", metavar="NAME_OR_PATH", dest=f"{prefix}model",
                      help=_("{names}, a local model folder, or a cached id").format(names=", ".join(MODEL_NAMES)))
    for name in ("layer", "head", "pad_to"):
        _add_option(real, MODEL_OPTIONS[name], prefix)
    real.add_argument("--target", metavar="DATE", dest=f"{prefix}target",
                      help=_("a date model: the expected output, e.g. 2026-11-22"))
    _add_option(real, MODEL_OPTIONS["teacher_forcing"], prefix)
    for name in ("generate", "do_sample", "top_k", "top_p", "cache"):  # a model writing (+ --temperature, --seed)
        _add_option(real, MODEL_OPTIONS[name], prefix)
    for name in ("probe", "probe_length", "probe_seed"):  # a built-in probe in place of --text
        _add_option(real, MODEL_OPTIONS[name], prefix)
    _add_common(p, prefix)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="attn-tui", description=_("Watch attention compute itself, stage by stage."))
    parser.add_argument("--version", action="version", version=f"attn-tui {__version__}")
    parser.add_argument("--fresh", action="store_true", dest=f"{TOP}fresh",
                        help=_("the app: start from the defaults, ignoring the saved session"))
    _add_input_options(parser, TOP)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    stages = sub.add_parser("stages", help=_("print every stage headless (table, JSON, CSV or .npz)"),
                            description=_("Compute a trace and print its stages."))
    _add_input_options(stages)
    stages.add_argument("--stage", metavar="NAME", nargs="?", const=LIST_STAGES,
                        help=_("print only this stage; --stage alone lists the stages of what was asked"))
    stages.add_argument("--format", choices=FORMATS, default="table",
                        help=_("table or json print to the terminal; csv prints one stage; npz needs --out"))
    stages.add_argument("--out", metavar="FILE", help=_("write to FILE instead of printing (json, csv, npz)"))
    stages.add_argument("--params", action="store_true",
                        help=_("JSON: include every learned parameter (always included when they are small)"))
    heads = sub.add_parser("heads", help=_("a real model at a glance: per-head statistics, roles and rollout"),
                           description=_("Entropy, largest weight and first-token share of every layer and head, "
                                         "plus attention rollout across layers; each head's roles: previous-token, "
                                         "duplicate-token and induction scores as TransformerLens's detect_head "
                                         "computes them (induction heads: Olsson et al. 2022), sink, local and "
                                         "entropy. --probe induction feeds a seeded random token sequence repeated "
                                         "twice."))
    heads.add_argument("--model", required=True, metavar="NAME_OR_PATH",
                       help=_("{names}, a local model folder, or a cached id").format(names=", ".join(MODEL_NAMES)))
    heads.add_argument("--text", metavar="TEXT", help=_("the sentence the model reads"))
    heads.add_argument("--pad-to", type=reader(MODEL_OPTIONS["pad_to"]), metavar="N",
                       help=help_text(MODEL_OPTIONS["pad_to"]))
    for name in ("probe", "probe_length", "probe_seed"):  # a built-in probe in place of --text
        _add_option(heads, MODEL_OPTIONS[name], "")  # type: ignore[arg-type]  # a parser takes arguments as a group
    heads.add_argument("--device", choices=DEVICE_NAMES, help=help_text(SETTINGS["device"]))
    heads.add_argument("--format", choices=("table", "json"), default="table",
                       help=_("a table on the terminal, or JSON (default table)"))
    _add_common(heads, "")
    train = sub.add_parser("train-seq2seq", help=_("train the date-normalising seq2seq model (CPU)"),
                           description=_("Train the GRU or the transformer encoder-decoder on generated dates and "
                                         "save a checkpoint; the defaults reproduce the shipped one."))
    train.add_argument("--arch", choices=("gru", "transformer"), default="gru",
                       help=_("a GRU with attention, or a transformer encoder-decoder (default gru)"))
    train.add_argument("--attention", choices=("additive", "general"), default=None,
                       help=_("the GRU's attention (default additive)"))
    train.add_argument("--epochs", type=_int_between(1, 1000), default=None,
                       help=_("default 4 (GRU) or 12 (transformer)"))
    train.add_argument("--steps", type=_int_between(1, 100_000), default=None,
                       help=_("steps per epoch (default 200 (GRU) or 300 (transformer))"))
    train.add_argument("--seed", type=_int_between(0, 2**32 - 1), default=0,
                       help=_("seeds the weights and the generated dates (default 0)"))
    train.add_argument("--out", metavar="FILE", default=None,
                       help=_("checkpoint path (default dates_ATTENTION.pt, or dates_transformer.pt)"))
    _add_debug(train, "")
    _add_trace(sub)
    _add_serve(sub)
    samples = sub.add_parser("samples", help=_("list the shipped samples"))
    _add_debug(samples, "")
    return parser


def _add_trace(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    trace = sub.add_parser("trace", help=_("run a Python file under the recorder and show the attention it computed"),
                           description=_("Run FILE.py (with its own arguments after it) as `python FILE.py args…` "
                                       "would, record every attention it computes, and open the app on it. "
                                       "Options of trace come before FILE.py."))
    trace.add_argument("script", nargs="?", metavar="FILE.py", help=_("the file to run"))
    trace.add_argument("script_args", nargs=argparse.REMAINDER, metavar="ARGS", help=_("arguments for the file"))
    from attn_tui.ask.samples import sample_script_paths

    trace.add_argument("--sample", metavar="NAME", help=_("a shipped sample script instead of a file ({names})").format(
        names=", ".join(sample_script_paths())))
    trace.add_argument("--format", choices=("app", "table", "json"), default="app",
                       help=_("app (default), or print the stages like `attn-tui stages`"))
    trace.add_argument("--stage", metavar="NAME", help=_("table/JSON: print only this stage"))
    trace.add_argument("--head", type=reader(MODEL_OPTIONS["head"]), metavar="H",
                       help=_("table/JSON: only this head, counted from 0"))
    trace.add_argument("--params", action="store_true", help=_("JSON: include every recorded parameter"))
    trace.add_argument("--max-calls", type=_int_between(1, 4096), default=64, metavar="N",
                       help=_("calls of each attention module kept, the last ones (default 64)"))
    trace.add_argument("--timeout", type=_int_between(0, 10**6), default=600, metavar="SECONDS",
                       help=_("stop the file after this many seconds (default 600; 0: no limit)"))
    _add_common(trace, "")


def _add_serve(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    serve = sub.add_parser("serve", help=_("serve the app to web browsers (needs attn-tui[web])"),
                           description=_("Serve attn-tui to web browsers with textual-serve: each visitor gets "
                                       "their own app. Listens on 127.0.0.1 unless --host says otherwise."))
    serve.add_argument("--host", default="127.0.0.1",
                       help=_("address to listen on (default 127.0.0.1: this machine only)"))
    serve.add_argument("--port", type=_int_between(1, 65535), default=8000, help=_("port (default 8000)"))
    serve.add_argument("--public-url", metavar="URL", help=_("the address browsers use, when it differs (a proxy)"))
    serve.add_argument("--max-sessions", type=_int_between(1, 64), default=4, metavar="N",
                       help=_("visitors at once, each with their own app (default 4)"))
    serve.add_argument("--idle-minutes", type=_positive_number, default=30.0, metavar="M",
                       help=_("end a visitor's app after M minutes without a keypress (default 30)"))
    serve.add_argument("--export-dir", default="attn-tui-exports", metavar="FOLDER",
                       help=_("the one folder visitors' exports are written to (default ./attn-tui-exports)"))
    _add_debug(serve, "")


def _set(value: object) -> bool:
    """Given on the command line: not absent (None) and not an unset flag (False); 0 counts as given."""
    return value is not None and value is not False


def normalise_argv(argv: Sequence[str]) -> list[str]:
    """`--mask-fill -inf` → `--mask-fill=-inf`, so argparse does not read -inf as an option."""
    out: list[str] = []
    dashed = dash_value_flags()
    it = iter(argv)
    for arg in it:
        if arg in dashed:
            value = next(it, None)
            out.append(arg if value is None else f"{arg}={value}")
        else:
            out.append(arg)
    return out


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """Parse; options given before a subcommand belong to the app and are refused with a subcommand."""
    args = build_parser().parse_args(normalise_argv(argv))
    top = {name[len(TOP):]: value for name, value in vars(args).items() if name.startswith(TOP)}
    given = sorted(name for name, value in top.items() if _set(value) and name not in _ANYWHERE)
    if args.command is not None:
        for name in _ANYWHERE:  # --debug and --max-memory may stand before the subcommand too
            if not _set(top[name]):
                continue
            if not hasattr(args, name):
                fail(Msg("--{option} does not apply to {command}", option=name.replace("_", "-"),
                         command=args.command))
            if not _set(getattr(args, name)):
                setattr(args, name, top[name])
        alien = [name for name in given if not hasattr(args, name)]
        if alien:
            fail(Msg("--{option} does not apply to {command}", option=alien[0].replace("_", "-"),
                     command=args.command))
        if given:
            options = " ".join("--" + name.replace("_", "-") for name in given)
            fail(Msg("{options} must come after the subcommand: attn-tui {command} {options} …", options=options,
                     command=args.command))
    else:
        for name, value in top.items():
            setattr(args, name, value)
    for name in list(vars(args)):
        if name.startswith(TOP):
            delattr(args, name)
    return args
