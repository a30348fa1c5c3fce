"""From given options to a model run (`--model`, or a model sample): the command line's and the API's.

Beside `ask.request`, which builds a variant VariantAsk from the same options; this half
knows the date models by name (`ask.models`) and their target's alphabet. Torch-free, like all of `ask`, so the
command line, the API and the app build a model's ask without importing a source.
"""

from __future__ import annotations

import argparse
import re
from dataclasses import replace

from attn_tui.ask.models import DATE_MODELS, GRU_DATE_MODELS
from attn_tui.ask.request import MATRIX_OPTIONS, VARIANT_OPTIONS, refuse, sentence
from attn_tui.ask.settings import ModelAsk
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import Msg
from attn_tui.io.files import check_text, quoted

DRAW_OPTIONS = ("temperature", "seed")  # settings of the variants that a model's draw reads too


def model_ask(args: argparse.Namespace, own_sentence: bool = False) -> ModelAsk | None:
    """The model run that --model, or a model sample, asks for; explicit options win over the sample's.

    `own_sentence`: --model without --text reads the model's own sample sentence (`samples.sentence_for`, the app
    says so) rather than being refused."""
    base = None
    if args.sample is not None:
        from attn_tui.ask.samples import get_sample

        if args.model is not None:
            raise InputError(Msg("--sample cannot be combined with --model: a sample names its own model and text"))
        base = get_sample(args.sample).model
    if args.model is None and base is None:
        refuse(args, ("probe", "probe_length", "probe_seed"), Msg("without --model (a probe is fed to a real model)"))
        return None
    check_text(args.model or "", "--model")
    generating = bool(getattr(args, "generate", None)) or bool(base and base.generate)
    drawing = generating and (bool(getattr(args, "do_sample", False)) or bool(base and base.do_sample))
    shared = DRAW_OPTIONS if drawing else ()  # a draw's temperature and seed are the model's own
    refuse(args, tuple(n for n in VARIANT_OPTIONS if n not in shared) + MATRIX_OPTIONS,
           Msg("to a model (they set the attention variants); a model reads --text"))
    if not generating:
        refuse(args, ("do_sample", "top_k", "top_p", "cache"),
               Msg("without --generate N (they shape the tokens it writes)"))
    elif not drawing:
        refuse(args, ("top_k", "top_p"), Msg("to greedy writing: add --do-sample to draw tokens"))
    probing = bool(getattr(args, "probe", None))
    if not probing:
        refuse(args, ("probe_length", "probe_seed"), Msg("without --probe induction (they shape the probe)"))
    if probing and args.text is not None:
        raise InputError(Msg("--probe replaces --text: give one of them"))
    if args.model is not None and args.text is None and base is None and not probing:
        if not own_sentence:
            raise InputError(Msg("--model needs --text with the sentence to run through the model"))
        from attn_tui.ask.samples import sentence_for

        args = argparse.Namespace(**{**vars(args), "text": sentence_for(args.model)})
    name = args.model or (base.name if base else "")
    if probing and (name in DATE_MODELS or generating or args.pad_to is not None):
        raise ConfigError(Msg("--probe is fed to a transformer's one forward pass: not to a date model, "
                              "--generate or --pad-to"))
    if name in DATE_MODELS and generating:
        raise ConfigError(Msg("{name} writes dates by itself: --generate is for causal language models", name=name))
    if name in GRU_DATE_MODELS:
        refuse(args, ("layer", "head", "pad_to"), Msg("to {name}: it has one attention, not layers of heads",
                                                       name=name))
    if name in DATE_MODELS:
        refuse(args, ("pad_to",), Msg("to {name}: a date is read as it is, never padded", name=name))
        if getattr(args, "device", None) == "cuda":
            raise ConfigError(Msg("{name} runs on the CPU only: leave out --device cuda", name=name))
    else:
        refuse(args, ("target", "teacher_forcing"), Msg("to {name}: teacher forcing is for the date models",
                                                         name=quoted(name)))
    given = {"name": args.model, "text": None if args.text is None else sentence(args.text), "layer": args.layer,
             "head": args.head, "pad_to": args.pad_to, "target": args.target,
             "teacher_forcing": args.teacher_forcing, "device": getattr(args, "device", None)}
    for option in ("generate", "do_sample", "top_k", "top_p", "cache", "probe", "probe_length", "probe_seed") + (
            DRAW_OPTIONS if drawing else ()):
        given[option] = getattr(args, option, None)
    if given["cache"] is not None:
        cache_window(str(given["cache"]))  # refused now, in one line, before any model loads
    if args.target is not None:  # its alphabet and length are the model's: the date source checks them (codec)
        check_text(args.target, "--target")
        if not args.target:
            raise InputError(Msg("--target is empty; targets look like 2026-11-22"))
    model = replace(base or ModelAsk(name, ""), **{k: v for k, v in given.items() if v is not None})
    if probing:
        model = replace(model, text="")  # a sample's sentence gives way to the probe
    if model.teacher_forcing and not model.target:
        raise InputError(Msg("--teacher-forcing needs --target with the expected date, e.g. 2026-11-22"))
    return model


_WINDOW = re.compile(r"window:([0-9]{1,6}),sinks:([0-9]{1,6})")


def cache_window(text: str) -> tuple[int, int] | None:
    """`window:W,sinks:S` as (W, S); "" for the whole cache (None). StreamingLLM keeps S ≥ 0 sink tokens and the
    last W ≥ 1 (the newest token among them)."""
    if not text:
        return None
    found = _WINDOW.fullmatch(text.strip().replace(" ", ""))
    if found is None:
        raise ConfigError(Msg("--cache expects window:W,sinks:S (e.g. window:16,sinks:4), not {text}",
                              text=repr(text[:40])))
    window, sinks = int(found.group(1)), int(found.group(2))
    if window < 1:
        raise ConfigError(Msg("--cache window:{w}: the window keeps at least the newest token (1)", w=window))
    return window, sinks


def kept_positions(n: int, window: tuple[int, int] | None) -> list[int]:
    """The positions a step over `n` keys sees: all of them, or StreamingLLM's first S and last W (W, S)."""
    if window is None or n <= sum(window):
        return list(range(n))
    last, sinks = window
    return list(range(sinks)) + list(range(n - last, n))


def check_prompt(text: str, probe: tuple[str, int, int] | None = None) -> None:
    """A model's text, checked before the model loads: a text of nothing (and no probe fed instead) is refused at
    once, not after a minute of loading."""
    if probe is None:
        check_text(text, Msg("the text"))
        if not text.strip():
            raise ConfigError(Msg("the sentence is empty: type at least one word"))


def check_generation(model: ModelAsk) -> None:
    """A model's writing settings as the command line would take them (a session file or an API caller may hand
    anything): each of the right kind and in its declared range, the cache in its one form."""
    from attn_tui.ask.options import MODEL_OPTIONS, SETTINGS, OptionError

    for name in ("generate", "do_sample", "top_k", "top_p", "temperature", "seed", "cache"):
        option = MODEL_OPTIONS.get(name) or SETTINGS[name]
        value = getattr(model, name)
        if option.kind is bool or option.kind is str:
            if not isinstance(value, option.kind):
                raise ConfigError(Msg("{option} has the wrong type", option=option.flag))
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (option.kind is int
                                                                                and not isinstance(value, int)):
            raise ConfigError(Msg("{option} has the wrong type", option=option.flag))
        try:
            option.read(str(value))
        except OptionError as exc:
            raise ConfigError(Msg("{option}: {reason}", option=option.flag, reason=str(exc))) from None
    cache_window(model.cache)
