"""What each subcommand does; torch and the models are imported only once the input has passed its checks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from attn_tui.ask.model_request import model_ask
from attn_tui.ask.models import DATE_MODELS, GGUF_MODELS, GRU_DATE_MODELS
from attn_tui.ask.request import Reader, variant_ask
from attn_tui.cli.parser import LIST_STAGES, fail
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import Msg, Plural, _
from attn_tui.io.controls import json_safe
from attn_tui.io.files import check_text, quoted, writable_file, writable_folder
from attn_tui.present.text import printable

if TYPE_CHECKING:
    from attn_tui.ask.settings import RecordAsk


def samples(args: argparse.Namespace) -> int:
    from attn_tui.ask.samples import load_samples

    found = load_samples()
    width = max(len(name) for name in found)
    for name, sample in found.items():
        print(f"{name:<{width}}  {_(sample.description)}")
    from attn_tui.sources.recorder.script import sample_scripts

    for name, path in sample_scripts().items():  # torch-free: only the folder is listed
        print(f"{name:<{width}}  attn-tui trace --sample {name} ({path.name})")
    return 0


def stages(args: argparse.Namespace) -> int:
    out = _output(args)
    model = model_ask(args)
    if model is not None:
        from attn_tui.sources import run

        trace = run(model, args.max_memory, model_statistics=False).trace  # the stages named, not every head
        layer, head = (model.layer, model.head) if trace.layers > 1 or trace.heads > 1 else (None, None)
        if model.generate and args.layer is None and args.head is None:
            layer, head = None, None  # a generation prints every layer and head of every step unless one is named
    else:
        request = variant_ask(args, Reader())
        if request is None:
            raise InputError(Msg("give an input: --text, --sample, --q/--k/--v or --x"))
        from attn_tui.ask.budget import memory_limit
        from attn_tui.ask.footprint import estimate

        # Before torch is imported: a request over budget is refused in milliseconds.
        estimate(request, json_output=args.format == "json").check(memory_limit(args.max_memory),
                                                                   Msg("this request"))
        from attn_tui.sources import run

        trace = run(request, args.max_memory).trace
        layer, head = None, args.head
    from attn_tui.io.export import select_stages

    if args.stage == LIST_STAGES:
        print(str(Msg("{title}'s stages: {names}", title=printable(str(trace.meta.title)),
                      names=", ".join(trace.names()))))
        return 0
    chosen = select_stages(trace, args.stage, layer, head)
    if out is not None:
        from attn_tui.io.export import export

        written = export(trace, chosen, args.format, out, True if args.params else None)
        print(str(Plural("wrote {n} stage to {path}", "wrote {n} stages to {path}", n=len(chosen),
                         path=printable(str(written)))))  # whole (the person needs to find it), but no control byte
    elif args.format == "json":
        from attn_tui.io.export import write_trace_json

        write_trace_json(trace, sys.stdout, chosen, True if args.params else None)
        sys.stdout.write("\n")
    elif args.format == "csv":
        from attn_tui.io.export import write_csv

        if len(chosen) != 1:
            raise ConfigError(Msg("csv printed here holds one stage, and {n} were chosen: name one with --stage "
                                  "(and --head), or write them all with --out FOLDER", n=len(chosen)))
        write_csv(chosen[0], sys.stdout)
    else:
        from attn_tui.present.printed import printed_trace
        from attn_tui.render.stage_table import print_trace

        print_trace(printed_trace(trace, chosen))
    return 0


def _output(args: argparse.Namespace) -> Path | None:
    """Where `stages` writes (None: standard output), checked before anything is computed."""
    if args.params and args.format != "json":
        raise ConfigError(Msg("--params applies to --format json"))
    if args.out is None or args.out == "-":  # `-`: standard output, as for the inputs
        if args.format == "npz":
            raise ConfigError(Msg("--format npz writes a binary file: name it with --out FILE.npz"))
        return None
    if not args.out.strip():
        raise ConfigError(Msg("--out is empty: name a file, or leave --out out to print"))
    if args.format == "table":
        raise ConfigError(Msg("--out writes json, csv or npz: add --format json, csv or npz"))
    out = Path(args.out)
    if args.format == "csv" and (args.stage is None or out.is_dir()):  # several stages: a file each, in a folder
        return writable_folder(out, Msg("the output"))
    return writable_file(out, Msg("the output"))


def heads(args: argparse.Namespace) -> int:
    import json

    from attn_tui.ask.settings import ModelAsk

    check_text(args.model, "--model")
    if args.probe and args.text is not None:
        raise InputError(Msg("--probe replaces --text: give one of them"))
    if not args.probe:
        if args.text is None:
            raise InputError(Msg("heads needs --text with the sentence, or --probe induction"))
        if args.probe_length is not None or args.probe_seed is not None:
            raise ConfigError(Msg("--probe-length and --probe-seed apply with --probe induction"))
        check_text(args.text, "--text")
        if not args.text.strip():
            raise InputError(Msg("the sentence is empty: type at least one word"))
    elif args.pad_to is not None:
        raise ConfigError(Msg("--pad-to pads a text: the probe is never padded"))
    if args.model in GRU_DATE_MODELS:
        raise InputError(Msg("{model} has one attention, not layers of heads: use `attn-tui stages --model {model}`",
                             model=args.model))
    if args.model in DATE_MODELS:
        raise InputError(Msg("{model} is an encoder-decoder traced step by step: use `attn-tui stages --model "
                             "{model} --layer L --head H`", model=args.model))
    from attn_tui.sources import run

    probe = {"probe": args.probe, "probe_length": args.probe_length, "probe_seed": args.probe_seed}
    asked = ModelAsk(args.model, args.text or "", pad_to=args.pad_to, device=args.device or "auto",
                       **{k: v for k, v in probe.items() if v is not None})
    shown = run(asked, args.max_memory)
    trace, model_stats = shown.trace, shown.stats
    assert model_stats is not None  # a transformer's ask: the door read every head
    stats, rolled = model_stats.stats, model_stats.rollout  # the JSON's; the table draws the app's summary
    from attn_tui.present.kv_sharing import kv_sharing
    from attn_tui.present.layer_windows import window_note, windows_of

    sharing = kv_sharing(trace)  # grouped-query models: which key/value head each query head reads
    if args.format == "json":
        document = {"model": trace.meta.title, "tokens": list(trace.query_tokens), "layers": trace.layers,
                    "heads": trace.heads, "warnings": [str(w) for w in trace.warnings],
                    "layer_heads": list(trace.meta.layer_heads) or None,  # each layer's own count where they differ
                    "kv_map": None if sharing is None else [sharing.kv_of(h) for h in range(trace.heads)],
                    "windows": list(windows_of(trace)),
                    "stats": [vars(s) for s in stats], "rollout": rolled.tolist(),
                    "rollout_moved": None if model_stats.rollout_moved is None else model_stats.rollout_moved.tolist(),
                    "probe": getattr(trace.meta, "probe", "") or None,
                    "scored_from": getattr(trace.meta, "scored_from", 0),
                    "roles": [{"layer": r.layer, "head": r.head, "scores": r.scores, "breadth": r.breadth,
                               "moved": r.moved} for r in model_stats.roles]}
        print(json_safe(json.dumps(document, ensure_ascii=False)))  # readable Korean, but no raw ESC or bidi mark
    else:
        from attn_tui.present.model_view import summary_of
        from attn_tui.render.model_table import print_model_summary

        summary = summary_of(shown)
        assert summary is not None  # the door read every head
        print_model_summary(summary)
        from attn_tui.present.role_table import role_table
        from attn_tui.render.role_table import print_role_table

        roles = role_table(model_stats.roles, trace.layers, trace.heads, getattr(trace.meta, "probe", ""))
        if roles is not None:
            print_role_table(roles)
        if sharing is not None:
            from attn_tui.render.kv_sharing import sharing_text

            print(sharing_text(sharing))
        if window_note(summary.windows):  # which layers are local (a sliding window) and which global
            print(window_note(summary.windows))
        for warning in trace.warnings:
            print(_("warning: {warning}").format(warning=printable(str(warning))))
    return 0


def train(args: argparse.Namespace) -> int:
    if args.out == "-":
        raise InputError(Msg("--out - : a checkpoint is written to a file, not to standard output"))
    if args.arch == "transformer" and args.attention is not None:
        raise InputError(Msg("--attention applies to --arch gru; the transformer's attention is multi-head "
                             "scaled dot-product"))
    attention = args.attention or "additive"
    name = attention if args.arch == "gru" else args.arch
    out = writable_file(Path(args.out if args.out is not None else f"dates_{name}.pt"), Msg("the checkpoint"))
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from attn_tui.models.seq2seq import train as trainer

    epochs, steps = trainer.TRAINING[args.arch]
    epochs, steps = args.epochs or epochs, args.steps or steps
    columns = (TextColumn("[bold]" + _("training") + "[/] {task.fields[attention]}"), BarColumn(),
               MofNCompleteColumn(), TextColumn(_("loss") + " {task.fields[loss]:.4f}  " + _("held-out") +
                                                " {task.fields[acc]}"), TimeElapsedColumn())
    with Progress(*columns) as bar:
        task = bar.add_task("train", total=epochs * steps, attention=name, loss=0.0, acc="–")

        def report(p: trainer.Progress) -> None:
            if p.accuracy is None:
                bar.update(task, completed=p.step, loss=p.loss)
            else:
                bar.update(task, completed=p.step, loss=p.loss, acc=f"{p.accuracy:.2%}")

        model, accuracy = trainer.train(attention, epochs, steps, seed=args.seed, on_step=report, arch=args.arch)
    try:
        trainer.save(model, out, accuracy)
    except OSError as exc:  # a full disk: the checkpoint that was there stays whole
        raise InputError(Msg("cannot write {what} to {path}: {reason}", what=Msg("the checkpoint"),
                             path=quoted(str(out)), reason=exc.strerror or exc)) from None
    print(_("held-out exact match {accuracy}; saved {path} ({kib} KiB)").format(
        accuracy=f"{accuracy:.2%}", path=quoted(str(out)), kib=f"{out.stat().st_size / 1024:.0f}"))
    return 0


def app(args: argparse.Namespace) -> int:
    model = model_ask(args, own_sentence=True)
    notice = None
    if model is not None and args.text is None and args.sample is None and not model.probe:
        notice = Msg("no --text: {model} reads its sample sentence “{text}” (type another in the input pane)",
                     model=printable(model.name), text=model.text)
    if model is not None and model.name in GGUF_MODELS:
        from attn_tui.sources.gguf import find_gguf

        find_gguf(model.name)  # not installed: said here, before the app starts
    elif model is not None and model.name not in DATE_MODELS:
        from attn_tui.ask.budget import memory_limit
        from attn_tui.sources.folder import known_model
        from attn_tui.sources.load_plan import load_plan

        folder = known_model(model.name)  # broken, scheming, or too big even offloaded: said here, not in the app
        load_plan(folder, memory_limit(args.max_memory), model.name)
    request = variant_ask(args, Reader()) if model is None else None
    if request is not None:
        from attn_tui.ask.budget import memory_limit
        from attn_tui.ask.footprint import estimate

        estimate(request).check(memory_limit(args.max_memory), Msg("this request"))
    from attn_tui.tui.app import run_app

    first_stage = None
    if args.sample is not None:
        from attn_tui.ask.samples import get_sample

        first_stage = get_sample(args.sample).stage
    return run_app(request, model, fresh=args.fresh, max_memory=args.max_memory, first_stage=first_stage, notice=notice,
                   sample=args.sample)


LARGE_OUTPUT = 1 << 30  # bytes of printed JSON past which `trace` says how large it is, and how to write less


def trace(args: argparse.Namespace) -> int:
    """Run the user's file under the recorder (through the one door); open the app on what it computed, or print it."""
    from attn_tui.i18n import Msg

    if args.sample is not None and args.script is not None:
        raise InputError(Msg("give a file or --sample, not both"))
    if args.script is None and args.sample is None:
        raise InputError(Msg("give the Python file to run: attn-tui trace FILE.py [args…] (or --sample NAME)"))
    if args.format == "app" and (args.stage is not None or args.head is not None or args.params):
        raise ConfigError(Msg("--stage, --head and --params apply to --format table or json"))
    from attn_tui.ask.settings import RecordAsk
    from attn_tui.sources import run

    ask = RecordAsk(args.script or "", tuple(args.script_args), args.sample, args.max_calls, args.timeout,
                    quiet_stdout=args.format != "app", debug=bool(args.debug))
    recorded = run(ask, args.max_memory).trace
    code = _show_recorded(args, ask.keeping(recorded))
    if recorded.meta.threads:  # the file ran in a process of its own, which ended without waiting for them
        print(str(Plural("warning: {script} left {n} thread running; attn-tui exits without waiting for it",
                         "warning: {script} left {n} threads running; attn-tui exits without waiting for them",
                         script=printable(ask.file_name), n=recorded.meta.threads)), file=sys.stderr)
    stopped = getattr(recorded.meta, "stopped", "")
    if stopped and args.format != "app":  # what it computed is printed; that it failed is the exit status
        fail(stopped)
    return code


def _show_recorded(args: argparse.Namespace, ask: RecordAsk) -> int:
    if args.format == "app":
        from attn_tui.tui.app import run_app

        return run_app(record=ask, max_memory=args.max_memory)  # shown through the same door, not run again
    from attn_tui.sources import run

    recorded = run(ask, args.max_memory).trace
    from attn_tui.io.export import select_stages

    chosen = select_stages(recorded, args.stage, None, args.head)
    if args.format == "json":
        from attn_tui.ask.budget import format_bytes
        from attn_tui.io.export import output_size, write_trace_json

        size = output_size(recorded, chosen, "json", True if args.params else None)
        if size > LARGE_OUTPUT:  # a long file's stages, every head: streamed, but the reader should know
            print(str(Msg("note: this JSON is about {size}; --stage NAME and --head N write less",
                          size=format_bytes(size))), file=sys.stderr)
        write_trace_json(recorded, sys.stdout, chosen, True if args.params else None)
        sys.stdout.write("\n")
    else:
        if args.params:
            raise ConfigError("--params applies to --format json")
        from attn_tui.present.printed import printed_trace
        from attn_tui.render.stage_table import print_trace

        print_trace(printed_trace(recorded, chosen))
    return 0


def serve(args: argparse.Namespace) -> int:
    """The app in web browsers, through textual-serve; one app per visitor."""
    from attn_tui.cli.serve import serve as run

    return run(args.host, args.port, args.public_url, args.debug, max_sessions=args.max_sessions,
               idle_minutes=args.idle_minutes, export_dir=args.export_dir)


COMMANDS = {None: app, "stages": stages, "heads": heads, "train-seq2seq": train, "samples": samples,
            "trace": trace, "serve": serve}
