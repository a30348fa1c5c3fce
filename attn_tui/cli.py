"""The `attn-tui` command: the app by default, `stages` headless, `samples` to list inputs.

Nothing heavy is imported at module level: `attn-tui` must paint its first screen
before torch has loaded, and `attn-tui samples` never needs torch at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import NoReturn, Sequence

from attn_tui import __version__
from attn_tui.core.errors import AttnError, InputError
from attn_tui.core.inputs import parse_matrix
from attn_tui.core.settings import (DEVICE_NAMES as DEVICES, DTYPE_NAMES as DTYPES, FILL_NAMES as FILLS,
                                    MASK_NAMES as MASKS, VARIANT_NAMES, MatrixInput, ModelInput, Request,
                                    SentenceInput, Settings, XInput)

# Options whose value may start with '-' (argparse would take `-inf` for an option).
_DASH_VALUE_OPTIONS = ("--mask-fill",)


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage error as one line on stderr and exit code 2."""

    def error(self, message: str) -> NoReturn:
        fail(message, self.prog)


def fail(message: str, prog: str = "attn-tui") -> NoReturn:
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def _int_at_least(minimum: int):
    """An argparse type: a whole number no smaller than `minimum`, with a message that says so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = "whole number"
    return parse


_positive, _non_negative = _int_at_least(1), _int_at_least(0)


def _temperature(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def _add_input_options(p: argparse.ArgumentParser) -> None:
    """Options shared by the app and `stages`; all default to None so a sample's own win."""
    src = p.add_argument_group("input (one of)")
    src.add_argument("--text", help="a sentence, split on whitespace (<pad> marks padding)")
    src.add_argument("--sample", help="a shipped sample by name (see `attn-tui samples`)")
    src.add_argument("--q", metavar="FILE", help="typed Q matrix (- reads standard input)")
    src.add_argument("--k", metavar="FILE", help="typed K matrix")
    src.add_argument("--v", metavar="FILE", help="typed V matrix")
    src.add_argument("--x", metavar="FILE", help="typed X matrix (token vectors, self-attention)")
    opt = p.add_argument_group("settings")
    opt.add_argument("--variant", choices=VARIANT_NAMES)
    opt.add_argument("--mask", choices=MASKS)
    opt.add_argument("--mask-file", metavar="FILE", help="custom 0/1 mask, 1 = may attend (ANDed with --mask)")
    opt.add_argument("--pad-keys", type=_non_negative, metavar="N", help="treat the last N keys as padding")
    opt.add_argument("--mask-fill", choices=FILLS, help="value written into masked scores (default -inf)")
    opt.add_argument("--heads", type=_positive, help="heads for multihead (must divide --dim)")
    opt.add_argument("--dim", type=_positive, help="model dimension for sentences; hidden size for additive/concat")
    opt.add_argument("--positional", action="store_const", const=True, help="add sinusoidal positions")
    opt.add_argument("--temperature", type=_temperature, help="divides the scores (default 1)")
    opt.add_argument("--seed", type=int)
    opt.add_argument("--device", choices=DEVICES)
    opt.add_argument("--dtype", choices=DTYPES)


def _add_app_model_options(p: argparse.ArgumentParser) -> None:
    """The app's real-model options: `attn-tui --model minilm --text …` opens the app on that model."""
    real = p.add_argument_group("real or trained model (the app)")
    real.add_argument("--model", metavar="NAME_OR_PATH",
                      help="minilm, seq2seq-dates, seq2seq-dates-general, a local model folder, or a cached id")
    real.add_argument("--layer", type=_non_negative, metavar="L", help="layer to show first (default 0)")
    real.add_argument("--head", type=_non_negative, metavar="H", help="head to show first (default 0)")
    real.add_argument("--pad-to", type=_positive, metavar="N", help="pad the tokenised text to N tokens")
    real.add_argument("--target", metavar="DATE", help="seq2seq-dates: the expected output, e.g. 2026-11-22")
    real.add_argument("--teacher-forcing", action="store_true",
                      help="seq2seq-dates: feed the target's characters instead of the model's own")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="attn-tui", description="Watch attention compute itself, stage by stage.")
    parser.add_argument("--version", action="version", version=f"attn-tui {__version__}")
    _add_input_options(parser)
    _add_app_model_options(parser)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    stages = sub.add_parser("stages", help="print every stage headless (table or JSON)",
                            description="Compute a trace and print its stages.")
    _add_input_options(stages)
    stages.add_argument("--stage", metavar="NAME", help="print only this stage")
    stages.add_argument("--head", type=_non_negative, metavar="H",
                        help="multihead: only this head's stages; --model: the head to trace (default 0)")
    real = stages.add_argument_group("real model (needs attn-tui[models])")
    real.add_argument("--model", metavar="NAME_OR_PATH", help="minilm, a local model folder, or a cached model id")
    real.add_argument("--layer", type=_non_negative, metavar="L", help="layer to trace (default 0)")
    real.add_argument("--pad-to", type=_positive, metavar="N", help="pad the tokenised text to N tokens")
    real.add_argument("--target", metavar="DATE", help="seq2seq-dates: the expected output, e.g. 2026-11-22")
    real.add_argument("--teacher-forcing", action="store_true",
                      help="seq2seq-dates: feed the target's characters instead of the model's own")
    stages.add_argument("--format", choices=("table", "json"), default="table")
    heads = sub.add_parser("heads", help="a real model at a glance: per-head statistics and rollout",
                           description="Entropy, largest weight and first-token share of every layer and "
                                       "head, plus attention rollout across layers.")
    heads.add_argument("--model", required=True, metavar="NAME_OR_PATH")
    heads.add_argument("--text", required=True)
    heads.add_argument("--pad-to", type=_positive, metavar="N")
    heads.add_argument("--device", choices=DEVICES)
    heads.add_argument("--format", choices=("table", "json"), default="table")
    train = sub.add_parser("train-seq2seq", help="train the date-normalising seq2seq model (CPU)",
                           description="Train the GRU encoder-decoder on generated dates and save a checkpoint.")
    train.add_argument("--attention", choices=("additive", "general"), default="additive")
    train.add_argument("--epochs", type=_positive, default=4)
    train.add_argument("--steps", type=_positive, default=200, help="steps per epoch (default 200)")
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--out", metavar="FILE", default=None, help="checkpoint path (default dates_ATTENTION.pt)")
    sub.add_parser("samples", help="list the shipped samples")
    return parser


def _normalise_argv(argv: Sequence[str]) -> list[str]:
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


def _read(path: str, what: str, stdin_used: list[str]) -> str:
    if path == "-":
        stdin_used.append(what)
        if len(stdin_used) > 1:
            raise InputError(f"only one input can come from standard input ({' and '.join(stdin_used)} asked)")
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot read {what} from {path!r}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise InputError(f"cannot read {what} from {path!r}: not UTF-8 text") from None


def request_from_args(args: argparse.Namespace) -> Request | None:
    """Build the Request the options describe; None when no input was named (the app's default)."""
    given = [name for name in ("text", "sample", "q", "k", "v", "x") if getattr(args, name) is not None]
    stdin_used: list[str] = []
    base: Request | None = None
    if args.sample is not None:
        from attn_tui.core.samples import get_sample

        if len(given) > 1:
            raise InputError("--sample cannot be combined with --text, --q/--k/--v or --x")
        base = get_sample(args.sample).request
    elif args.text is not None:
        if len(given) > 1:
            raise InputError("--text cannot be combined with --q/--k/--v or --x")
        base = Request(SentenceInput(args.text))
    elif args.x is not None:
        if len(given) > 1:
            raise InputError("--x cannot be combined with --q/--k/--v")
        base = Request(XInput(parse_matrix(_read(args.x, "X", stdin_used), "X")))
    elif any(getattr(args, n) is not None for n in ("q", "k", "v")):
        missing = [f"--{n}" for n in ("q", "k", "v") if getattr(args, n) is None]
        if missing:
            raise InputError(f"typed matrices need --q, --k and --v; missing {' and '.join(missing)}")
        q, k, v = (parse_matrix(_read(getattr(args, n), n.upper(), stdin_used), n.upper()) for n in "qkv")
        base = Request(MatrixInput(q, k, v))
    if base is None:
        return None
    overrides = {name: getattr(args, name) for name in
                 ("variant", "mask", "mask_fill", "pad_keys", "heads", "dim", "positional", "seed",
                  "device", "dtype", "temperature") if getattr(args, name) is not None}
    settings: Settings = replace(base.settings, **overrides)
    custom = base.custom_mask
    if args.mask_file is not None:
        custom = parse_matrix(_read(args.mask_file, "the mask", stdin_used), "mask")
    if isinstance(base.source, MatrixInput) and settings.variant == "multihead":
        raise InputError("multihead projects Q, K and V itself: give --x or --text instead of --q/--k/--v")
    return Request(base.source, settings, custom)


def _cmd_samples() -> int:
    from attn_tui.core.samples import load_samples

    samples = load_samples()
    width = max(len(name) for name in samples)
    for name, sample in samples.items():
        print(f"{name:<{width}}  {sample.description}")
    return 0


def _model_input(args: argparse.Namespace) -> ModelInput | None:
    """The model run that --model, or a model sample, asks for; explicit options win."""
    base = None
    if args.sample is not None:
        from attn_tui.core.samples import get_sample

        base = get_sample(args.sample).model
    if args.model is None and base is None:
        return None
    if args.model is not None and args.text is None and base is None:
        raise InputError("--model needs --text with the sentence to run through the model")
    base = base or ModelInput(args.model, args.text)
    given = {"name": args.model, "text": args.text, "layer": args.layer, "head": args.head, "pad_to": args.pad_to,
             "target": args.target, "teacher_forcing": args.teacher_forcing or None}
    return replace(base, **{k: v for k, v in given.items() if v is not None})


def _cmd_stages(args: argparse.Namespace) -> int:
    from attn_tui.core.engine import compute
    from attn_tui.core.export import select_stages, trace_to_json

    model = _model_input(args)
    if model is not None:
        from attn_tui.models.registry import trace_for

        trace = trace_for(model, args.device or "auto")
        stages = select_stages(trace, args.stage)
    else:
        request = request_from_args(args)
        if request is None:
            raise InputError("give an input: --text, --sample, --q/--k/--v or --x")
        trace = compute(request)
        stages = select_stages(trace, args.stage, args.head)
    if args.format == "json":
        sys.stdout.write(trace_to_json(trace, stages) + "\n")
    else:
        from attn_tui.render.stage_table import print_trace

        print_trace(trace, stages)
    return 0


def _cmd_heads(args: argparse.Namespace) -> int:
    import json

    from attn_tui.models.registry import is_seq2seq, model_run
    from attn_tui.models.summary import head_stats, rollout, stack

    if is_seq2seq(args.model):
        raise InputError(f"{args.model} has one attention, not layers of heads: "
                         f"use `attn-tui stages --model {args.model}`")
    run = model_run(args.model, args.text, args.pad_to, args.device or "auto")
    loaded = run.loaded
    weights = stack(run.attentions)  # (layers, heads, N, N)
    real = run.mask.any(dim=0)  # (N,) keys that are not padding
    stats = head_stats(weights, real)
    rolled = rollout(weights, real)
    if args.format == "json":
        print(json.dumps({"model": loaded.name, "tokens": list(run.tokens), "layers": loaded.layers,
                          "heads": loaded.heads, "stats": [vars(s) for s in stats],
                          "rollout": rolled.tolist()}, ensure_ascii=False))
    else:
        from attn_tui.render.model_table import print_model_summary

        print_model_summary(loaded.name, run.tokens, stats, rolled, loaded.layers, loaded.heads)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from attn_tui.models.seq2seq import train as trainer

    out = Path(args.out or f"dates_{args.attention}.pt")
    columns = (TextColumn("[bold]training[/] {task.fields[attention]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("loss {task.fields[loss]:.4f}  held-out {task.fields[acc]}"), TimeElapsedColumn())
    with Progress(*columns) as bar:
        task = bar.add_task("train", total=args.epochs * args.steps, attention=args.attention, loss=0.0, acc="–")

        def report(p: trainer.Progress) -> None:
            fields = {"loss": p.loss} | ({"acc": f"{p.accuracy:.2%}"} if p.accuracy is not None else {})
            bar.update(task, completed=p.step, **fields)

        model, accuracy = trainer.train(args.attention, args.epochs, args.steps, seed=args.seed, on_step=report)
    trainer.save(model, out, accuracy)
    print(f"held-out exact match {accuracy:.2%}; saved {out} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0


def _cmd_app(args: argparse.Namespace) -> int:
    model = _model_input(args)
    request = request_from_args(args)
    from attn_tui.tui.app import run_app

    return run_app(request, model)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(_normalise_argv(sys.argv[1:] if argv is None else argv))
    try:
        if args.command == "samples":
            return _cmd_samples()
        if args.command == "stages":
            return _cmd_stages(args)
        if args.command == "heads":
            return _cmd_heads(args)
        if args.command == "train-seq2seq":
            return _cmd_train(args)
        return _cmd_app(args)
    except AttnError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except (RuntimeError, ValueError, MemoryError) as exc:
        # Torch raises these for inputs the checks above did not foresee; report, don't crash.
        if os.environ.get("ATTN_TUI_DEBUG"):
            raise
        fail(f"could not compute: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}")
