"""The argument parser of `attn-tui`: the app by default, and its subcommands.

Every option a subcommand takes is declared here once; `request.py` decides which of
them apply to what was asked, so that none is ever silently dropped.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

from attn_tui import __version__
from attn_tui.ask.footprint import MAX_HEADS
from attn_tui.ask.settings import (
    DEVICE_NAMES,
    DTYPE_NAMES,
    FILL_NAMES,
    MASK_MEANS_NAMES,
    MASK_NAMES,
    PROJECTION_NAMES,
    VARIANT_NAMES,
)
from attn_tui.i18n import Msg, _
from attn_tui.io.files import QUOTE_LIMIT
from attn_tui.present.text import printable
from attn_tui.sources.names import MODEL_NAMES

TOP = "top_"  # dest prefix of the options given before a subcommand (the app's own)
_DASH_VALUE_OPTIONS = ("--mask-fill",)  # values that start with '-' (argparse would take -inf for an option)
_ANYWHERE = ("debug", "max_memory")
FORMATS = ("table", "json", "csv", "npz")
MAX_LINE = 240  # an error line longer than this is cut: one short line, whatever the input
_WHOLE = re.compile(r"[+-]?[0-9]+")
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


def _int_between(minimum: int, maximum: int = 10**9) -> Callable[[str], int]:
    """An argparse type: a whole number in [minimum, maximum], with a message that says so."""

    def parse(text: str) -> int:
        if not _WHOLE.fullmatch(text.strip()):  # plain ASCII digits: no '1_0', no other scripts' digits
            raise argparse.ArgumentTypeError(_("expected a whole number, got {text}").format(text=repr(text[:30])))
        value = int(text)
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(_("must be between {lo} and {hi}, got {text}").format(
                lo=f"{minimum:,}", hi=f"{maximum:,}", text=text[:30]))
        return value

    parse.__name__ = "whole number"
    return parse


_positive, _non_negative = _int_between(1), _int_between(0)


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("expected a number, got {text}").format(text=repr(text[:30]))) from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(_("must be a positive finite number, got {text}").format(text=text[:30]))
    return value


def _rope_base(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(_("expected a number, got {text}").format(text=repr(text[:30]))) from None
    if not 1 < value < float("inf"):
        raise argparse.ArgumentTypeError(_("must be a finite number above 1, got {text}").format(text=text[:30]))
    return value


def _memory(text: str) -> int:
    from attn_tui.ask.budget import parse_size
    from attn_tui.errors import ConfigError

    try:
        return parse_size(text)
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_common(p: argparse.ArgumentParser, prefix: str) -> None:
    p.add_argument("--max-memory", type=_memory, metavar="SIZE", dest=f"{prefix}max_memory",
                   help=_("refuse requests that would need more memory (e.g. 2G; default: a share of what is free)"))
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
    opt.add_argument("--variant", choices=VARIANT_NAMES, dest=f"{prefix}variant")
    opt.add_argument("--projection", choices=PROJECTION_NAMES, dest=f"{prefix}projection",
                     help=_("from a sentence or X: learned (seeded) W_q, W_k, W_v, or identity (Q = K = V = X)"))
    opt.add_argument("--mask", choices=MASK_NAMES, dest=f"{prefix}mask")
    opt.add_argument("--mask-file", metavar="FILE", dest=f"{prefix}mask_file",
                     help=_("custom 0/1 mask, L×S or 1×S (one row per key, for every query); ANDed with --mask"))
    opt.add_argument("--mask-means", choices=MASK_MEANS_NAMES, dest=f"{prefix}mask_means",
                     help=_("what a 1 in the mask means: attend (1 = may attend, torch's SDPA; the default) or "
                            "block (1 = padding, the key is blocked, as some notes write it)"))
    opt.add_argument("--pad-keys", type=_non_negative, metavar="N", dest=f"{prefix}pad_keys",
                     help=_("treat the last N keys as padding"))
    opt.add_argument("--mask-fill", choices=FILL_NAMES, dest=f"{prefix}mask_fill",
                     help=_("value written into masked scores (default -inf)"))
    opt.add_argument("--heads", type=_int_between(1, MAX_HEADS), metavar="N", dest=f"{prefix}heads",
                     help=_("heads for multihead, gqa, alibi and sink (must divide the width)"))
    opt.add_argument("--kv-heads", type=_int_between(1, MAX_HEADS), metavar="K", dest=f"{prefix}kv_heads",
                     help=_("gqa: key/value heads shared by the query heads (must divide --heads; 1 = multi-query)"))
    opt.add_argument("--rope-base", type=_rope_base, metavar="BASE", dest=f"{prefix}rope_base",
                     help=_("rope: θ_i = BASE^(−2i/d) (default 10000)"))
    opt.add_argument("--window", type=_int_between(1, 100_000), metavar="W", dest=f"{prefix}window",
                     help=_("sliding masks: query i sees keys i−W < j ≤ i (default 3)"))
    opt.add_argument("--tile", type=_int_between(1, 100_000), metavar="T", dest=f"{prefix}tile",
                     help=_("flash: keys per tile of the online softmax (default 4)"))
    opt.add_argument("--dim", type=_positive, metavar="D", dest=f"{prefix}dim",
                     help=_("model dimension for sentences; hidden size for additive/concat"))
    opt.add_argument("--positional", action="store_const", const=True, dest=f"{prefix}positional",
                     help=_("add sinusoidal positions"))
    opt.add_argument("--temperature", type=_temperature, metavar="TEMP", dest=f"{prefix}temperature",
                     help=_("divides the scores (default 1)"))
    opt.add_argument("--seed", type=_int_between(-(2**62), 2**62), metavar="S", dest=f"{prefix}seed")
    opt.add_argument("--device", choices=DEVICE_NAMES, dest=f"{prefix}device")
    opt.add_argument("--dtype", choices=DTYPE_NAMES, dest=f"{prefix}dtype")
    real = p.add_argument_group(_("real or trained model"))
    real.add_argument("--model", metavar="NAME_OR_PATH", dest=f"{prefix}model",
                      help=_("{names}, a local model folder, or a cached id").format(names=", ".join(MODEL_NAMES)))
    real.add_argument("--layer", type=_non_negative, metavar="L", dest=f"{prefix}layer",
                      help=_("a transformer's layer, counted from 0 (default 0)"))
    real.add_argument("--head", type=_non_negative, metavar="H", dest=f"{prefix}head",
                      help=_("multihead or a transformer: the head, counted from 0 (default 0)"))
    real.add_argument("--pad-to", type=_int_between(1, 100_000), metavar="N", dest=f"{prefix}pad_to",
                      help=_("a transformer: pad the tokenised text to N tokens"))
    real.add_argument("--target", metavar="DATE", dest=f"{prefix}target",
                      help=_("a date model: the expected output, e.g. 2026-11-22"))
    real.add_argument("--teacher-forcing", action="store_true", default=None, dest=f"{prefix}teacher_forcing",
                      help=_("a date model: feed the target's characters instead of the model's own"))
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
    stages.add_argument("--stage", metavar="NAME", help=_("print only this stage"))
    stages.add_argument("--format", choices=FORMATS, default="table",
                        help=_("table or json print to the terminal; csv prints one stage; npz needs --out"))
    stages.add_argument("--out", metavar="FILE", help=_("write to FILE instead of printing (json, csv, npz)"))
    stages.add_argument("--params", action="store_true",
                        help=_("JSON: include every learned parameter (always included when they are small)"))
    heads = sub.add_parser("heads", help=_("a real model at a glance: per-head statistics and rollout"),
                           description=_("Entropy, largest weight and first-token share of every layer and head, "
                                         "plus attention rollout across layers."))
    heads.add_argument("--model", required=True, metavar="NAME_OR_PATH")
    heads.add_argument("--text", required=True)
    heads.add_argument("--pad-to", type=_int_between(1, 100_000), metavar="N")
    heads.add_argument("--device", choices=DEVICE_NAMES)
    heads.add_argument("--format", choices=("table", "json"), default="table")
    _add_common(heads, "")
    train = sub.add_parser("train-seq2seq", help=_("train the date-normalising seq2seq model (CPU)"),
                           description=_("Train the GRU or the transformer encoder-decoder on generated dates and "
                                         "save a checkpoint; the defaults reproduce the shipped one."))
    train.add_argument("--arch", choices=("gru", "transformer"), default="gru")
    train.add_argument("--attention", choices=("additive", "general"), default=None,
                       help=_("the GRU's attention (default additive)"))
    train.add_argument("--epochs", type=_int_between(1, 1000), default=None,
                       help=_("default 4 (GRU) or 12 (transformer)"))
    train.add_argument("--steps", type=_int_between(1, 100_000), default=None,
                       help=_("steps per epoch (default 200 (GRU) or 300 (transformer))"))
    train.add_argument("--seed", type=_int_between(0, 2**32 - 1), default=0)
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
    trace.add_argument("--head", type=_non_negative, metavar="H", help=_("table/JSON: only this head, counted from 0"))
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
    serve.add_argument("--idle-minutes", type=_temperature, default=30.0, metavar="M",
                       help=_("end a visitor's app after M minutes without a key (default 30)"))
    serve.add_argument("--export-dir", default="attn-tui-exports", metavar="FOLDER",
                       help=_("the one folder visitors' exports are written to (default ./attn-tui-exports)"))
    _add_debug(serve, "")


def _set(value: object) -> bool:
    """Given on the command line: not absent (None) and not an unset flag (False); 0 counts as given."""
    return value is not None and value is not False


def normalise_argv(argv: Sequence[str]) -> list[str]:
    """`--mask-fill -inf` → `--mask-fill=-inf`, so argparse does not read -inf as an option."""
    out: list[str] = []
    it = iter(argv)
    for arg in it:
        if arg in _DASH_VALUE_OPTIONS:
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
