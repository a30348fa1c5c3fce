"""What each subcommand does; torch and the models are imported only once the input has passed its checks."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from attn_tui.cli.request import Reader, model_input, variant_request
from attn_tui.core.errors import ConfigError, InputError
from attn_tui.core.files import check_text, quoted, writable_file
from attn_tui.sources.names import DATE_MODELS, GGUF_MODELS


def samples(args: argparse.Namespace) -> int:
    from attn_tui.core.samples import load_samples

    found = load_samples()
    width = max(len(name) for name in found)
    for name, sample in found.items():
        print(f"{name:<{width}}  {sample.description}")
    return 0


def stages(args: argparse.Namespace) -> int:
    model = model_input(args)
    if model is not None:
        from attn_tui.sources.registry import trace_for

        trace = trace_for(model, args.max_memory)
        layer, head = (model.layer, model.head) if trace.layers > 1 or trace.heads > 1 else (None, None)
    else:
        request = variant_request(args, Reader())
        if request is None:
            raise InputError("give an input: --text, --sample, --q/--k/--v or --x")
        from attn_tui.core.budget import memory_limit
        from attn_tui.core.footprint import estimate

        # Before torch is imported: a request over budget is refused in milliseconds.
        estimate(request, json_output=args.format == "json").check(memory_limit(args.max_memory), "this request")
        from attn_tui.core.engine import compute

        trace = compute(request, args.max_memory)
        layer, head = None, args.head
    from attn_tui.core.export import select_stages

    chosen = select_stages(trace, args.stage, layer, head)
    if args.format == "json":
        from attn_tui.core.export import write_trace_json

        write_trace_json(trace, sys.stdout, chosen, True if args.params else None)
        sys.stdout.write("\n")
    else:
        if args.params:
            raise ConfigError("--params applies to --format json")
        from attn_tui.render.stage_table import print_trace

        print_trace(trace, chosen)
    return 0


def heads(args: argparse.Namespace) -> int:
    import json

    from attn_tui.core.settings import ModelInput

    check_text(args.model, "--model")
    check_text(args.text, "--text")
    if not args.text.strip():
        raise InputError("the sentence is empty: type at least one word")
    if args.model in DATE_MODELS:
        raise InputError(f"{args.model} has one attention, not layers of heads: "
                         f"use `attn-tui stages --model {args.model}`")
    from attn_tui.core.summary import head_stats, real_keys, rollout, stack
    from attn_tui.sources.registry import trace_for

    trace = trace_for(ModelInput(args.model, args.text, pad_to=args.pad_to, device=args.device or "auto"),
                      args.max_memory)
    weights = stack(trace)  # (layers, heads, N, N): every layer and head of the one trace
    real = real_keys(trace)  # (N,) keys that are not padding
    stats = head_stats(weights, real)
    rolled = rollout(weights, real)
    from attn_tui.present.kv_sharing import kv_sharing

    sharing = kv_sharing(trace)  # grouped-query models: which key/value head each query head reads
    if args.format == "json":
        print(json.dumps({"model": trace.meta.title, "tokens": list(trace.query_tokens), "layers": trace.layers,
                          "heads": trace.heads, "warnings": [str(w) for w in trace.warnings],
                          "kv_map": None if sharing is None else [sharing.kv_of(h) for h in range(trace.heads)],
                          "stats": [vars(s) for s in stats],
                          "rollout": rolled.tolist()}, ensure_ascii=False))
    else:
        from attn_tui.render.model_table import print_model_summary

        print_model_summary(trace.meta.title, trace.query_tokens, stats, rolled, trace.layers, trace.heads)
        if sharing is not None:
            from attn_tui.render.kv_sharing import sharing_text

            print(sharing_text(sharing))
        for warning in trace.warnings:
            print(f"warning: {warning}")
    return 0


def train(args: argparse.Namespace) -> int:
    if args.out == "-":
        raise InputError("--out - : a checkpoint is written to a file, not to standard output")
    out = writable_file(Path(args.out if args.out is not None else f"dates_{args.attention}.pt"), "the checkpoint")
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from attn_tui.models.seq2seq import train as trainer

    columns = (TextColumn("[bold]training[/] {task.fields[attention]}"), BarColumn(), MofNCompleteColumn(),
               TextColumn("loss {task.fields[loss]:.4f}  held-out {task.fields[acc]}"), TimeElapsedColumn())
    with Progress(*columns) as bar:
        task = bar.add_task("train", total=args.epochs * args.steps, attention=args.attention, loss=0.0, acc="–")

        def report(p: trainer.Progress) -> None:
            if p.accuracy is None:
                bar.update(task, completed=p.step, loss=p.loss)
            else:
                bar.update(task, completed=p.step, loss=p.loss, acc=f"{p.accuracy:.2%}")

        model, accuracy = trainer.train(args.attention, args.epochs, args.steps, seed=args.seed, on_step=report)
    trainer.save(model, out, accuracy)
    print(f"held-out exact match {accuracy:.2%}; saved {quoted(str(out))} ({out.stat().st_size / 1024:.0f} KiB)")
    return 0


def app(args: argparse.Namespace) -> int:
    model = model_input(args)
    if model is not None and model.name in GGUF_MODELS:
        from attn_tui.sources.gguf import find_gguf

        find_gguf(model.name)  # not installed: said here, before the app starts
    elif model is not None and model.name not in DATE_MODELS:
        from attn_tui.sources.folder import known_model

        known_model(model.name)  # a folder that is broken, or would run its own code, ends here, not in the app
    request = variant_request(args, Reader()) if model is None else None
    if request is not None:
        from attn_tui.core.budget import memory_limit
        from attn_tui.core.footprint import estimate

        estimate(request).check(memory_limit(args.max_memory), "this request")
    from attn_tui.tui.app import run_app

    return run_app(request, model, args.max_memory)


COMMANDS = {None: app, "stages": stages, "heads": heads, "train-seq2seq": train, "samples": samples}
