"""Real Hugging Face transformers as a source: every layer and head, the `scaled_dot` stages.

The stages are recomputed from the model's own Q/K/V projections of each layer's input
hidden states with the model's own mask, through the same scores and tail as the
variants, and checked against `output_attentions` in the tests; so the arithmetic
shown is the model's, not an imitation. Nothing here touches the network's weights.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from attn_tui.ask.budget import Estimate, format_bytes, memory_limit
from attn_tui.ask.model_request import check_prompt
from attn_tui.errors import AttnError, ConfigError, InputError
from attn_tui.i18n import Msg
from attn_tui.io.files import quoted
from attn_tui.sources.families import family_for, family_named, supported_types
from attn_tui.sources.families.shared.tracer import trace_run as traced
from attn_tui.sources.folder import (
    INSTALL_HINT,
    ModelError,
    check_folder,
    resolve,
)
from attn_tui.sources.load_plan import LoadPlan, check_disk, load_plan, offload_root, run_parts
from attn_tui.sources.model_run import LoadedModel as LoadedModel
from attn_tui.sources.model_run import ModelRun as ModelRun
from attn_tui.sources.model_run import check_vocabulary, non_finite
from attn_tui.sources.offload import layer_list, offload_folder, placement
from attn_tui.sources.progress import report
from attn_tui.trace.stage import Trace


@contextmanager
def no_stdin() -> Iterator[None]:
    """Nothing a library asks while loading can be answered from our standard input."""
    saved = sys.stdin
    sys.stdin = io.StringIO("")
    try:
        yield
    finally:
        sys.stdin = saved


def load(name: str, device: torch.device | str = "cpu", max_memory: int | None = None,
         shown: str | None = None) -> LoadedModel:
    """Load offline with eager attention, so attention weights are real and returnable.

    Only safetensors or `weights_only` loading is allowed, and never the folder's code. A model
    whose weights do not fit in what the budget leaves beside the tokenizer and a run is loaded
    with accelerate's `device_map="auto"`: the layers that do not fit are offloaded (to disk, or
    to the CPU when the model runs on a GPU) and read back while they run.
    `shown`: the name the model goes by on screen (a built-in model's, not its cache folder's).
    """
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        os.environ.setdefault(key, "1")
    folder = Path(resolve(name))
    check_folder(folder)
    plan = load_plan(folder, memory_limit(max_memory), name)  # config.json's sizes, the weight files, the tokenizer
    try:
        import transformers
        from transformers import AutoConfig, AutoTokenizer
    except ImportError:
        raise ModelError(Msg("real models need transformers: {hint}", hint=INSTALL_HINT)) from None
    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # no notices on stderr
    transformers.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    logging.getLogger("accelerate").setLevel(logging.ERROR)  # nor accelerate's ("parameters on the meta device")
    device = torch.device(device)
    try:
        with no_stdin():
            report(Msg("reading config.json"))
            config = AutoConfig.from_pretrained(folder, trust_remote_code=False)
            report(Msg("reading the tokenizer"))
            tokenizer = AutoTokenizer.from_pretrained(folder, trust_remote_code=False)
            report(Msg("reading the weights of {name}", name=quoted(name)))
            model = _weights(folder, config, device, plan, name)
    except AttnError:
        raise
    except Exception as exc:
        first: str | Msg = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        if "ignore_mismatched_sizes" in str(first):  # transformers' words point at a report that is not shown
            from attn_tui.sources.weight_files import size_mismatch

            first = _quietly(lambda: size_mismatch(folder, config)) or Msg(
                "config.json's sizes disagree with the shapes of its weights")
        if re.search(r"weights[_ ]only", str(first), re.IGNORECASE):  # torch's "Weights only load failed…" too
            first = Msg("its weights file holds pickled objects, not only tensors, and is refused (use safetensors)")
        raise ModelError(Msg("cannot load {name}: {reason}", name=quoted(name), reason=first)) from None
    cfg = model.config
    if int(getattr(cfg, "num_hidden_layers", 0) or 0) < 1 or int(getattr(cfg, "num_attention_heads", 0) or 0) < 1:
        raise ModelError(Msg("{name} has no attention layers to trace (num_hidden_layers or num_attention_heads is "
                             "0)", name=quoted(name)))
    family = family_for(str(cfg.model_type))  # the family whose adapter reads this model_type
    if family is None:
        raise ModelError(Msg("config.json of {folder} has model_type {kind}; attn-tui traces {kinds}",
                             folder=quoted(str(folder)), kind=quoted(str(cfg.model_type), 30),
                             kinds=", ".join(supported_types())))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    positions = int(getattr(cfg, "max_position_embeddings", 0) or getattr(cfg, "n_positions", 0) or 512)
    shown = shown or (name if len(name) <= 60 else name[:59] + "…")
    blocks = layer_list(model, family.blocks, cfg.num_hidden_layers)
    device_map = getattr(model, "hf_device_map", None) or {}
    offloaded = placement(device_map, blocks, cfg.num_hidden_layers, device.type) if device_map else ()
    return LoadedModel(name=shown, model=model, tokenizer=tokenizer, family=family.name,
                       layers=cfg.num_hidden_layers, heads=cfg.num_attention_heads, causal=family.causal,
                       positions=positions, width=cfg.hidden_size, offloaded=offloaded if any(offloaded) else (),
                       blocks=blocks, device=str(device))


def _weights(folder: Path, config: Any, device: torch.device, plan: LoadPlan, name: str) -> Any:
    """The model, whole on `device` when the plan says it fits, else dispatched by accelerate under the plan's room
    (`max_memory`), with a private folder for what it writes out (a safetensors checkpoint is read in place)."""
    from transformers import AutoModel

    options: dict[str, Any] = dict(config=config, attn_implementation="eager", weights_only=True)
    if plan.whole:
        model, info = AutoModel.from_pretrained(folder, trust_remote_code=False, **options, output_loading_info=True)
        return _complete(model, info, name).to(device).eval()
    if importlib.util.find_spec("accelerate") is None:
        raise ModelError(Msg("{name} needs about {weights}, more than the {room} --max-memory leaves for weights, and "
                             "offloading its layers needs accelerate: {hint}", name=quoted(name),
                             weights=format_bytes(plan.weights), room=format_bytes(plan.room), hint=INSTALL_HINT))
    where = offload_folder(offload_root())
    check_disk(plan, folder, where)
    budget: dict[int | str, int] = {"cpu": plan.room}
    if device.type == "cuda":
        budget = {device.index or 0: plan.room, "cpu": plan.room}
    report(Msg("{name} needs about {weights}, more than the {room} --max-memory leaves for weights: offloading "
               "layers", name=quoted(name), weights=format_bytes(plan.weights), room=format_bytes(plan.room)))
    model, info = AutoModel.from_pretrained(folder, trust_remote_code=False, **options, device_map="auto",
                                            max_memory=budget, offload_folder=str(where), output_loading_info=True)
    return _complete(model, info, name).eval()


OPTIONAL_WEIGHTS = ("pooler.",)  # weights an encoder checkpoint may leave out: no attention reads them


def _complete(model: Any, info: dict[str, Any], name: str) -> Any:
    """The model, when its files held every weight it needs, each finite: transformers fills a missing one with
    random numbers (a config naming more layers than the files hold), which would be traced as if it were the
    model's, and a NaN in a weight would turn every stage computed from it into NaN.

    An offloaded layer's weights stay on disk (on the meta device here) and are not read for this."""
    missing = sorted(key for key in info.get("missing_keys", ()) if not key.startswith(OPTIONAL_WEIGHTS))
    if missing:
        raise ModelError(Msg("{name}: config.json names {count} weights its files lack, first {key}",
                             name=quoted(name), count=len(missing), key=quoted(missing[0], 40)))
    for key, weight in model.named_parameters():
        if weight.device.type != "meta" and weight.is_floating_point() and not bool(torch.isfinite(weight).all()):
            raise ModelError(Msg("{name}: its weight {key} holds NaN or infinite values, and every stage computed "
                                 "from it would too", name=quoted(name), key=quoted(key, 60)))
    return model


_HANGUL = re.compile("[\uac00-\ud7a3]")  # composed syllables, as typed
_JAMO = re.compile("[\u1100-\u11ff\u3130-\u318f]")  # letters: what an uncased BERT vocabulary's NFD leaves


def run_estimate(loaded: LoadedModel, tokens: int) -> Estimate:
    """What one forward pass with every attention and hidden state returned will hold."""
    return run_parts(loaded.layers, loaded.heads, loaded.width, tokens)


def run(loaded: LoadedModel, text: str, pad_to: int | None = None, max_memory: int | None = None,
        probe: tuple[str, int, int] | None = None) -> ModelRun:
    """Tokenise (optionally padded to `pad_to` tokens) and run the model once.

    A text longer than the model's positions is cut to fit, with a warning; the run's
    memory is checked against the budget before the forward pass. `probe` (kind, length, seed):
    feed a built-in probe's ids (sources/probe.py) instead of the text.
    """
    if probe is not None:
        from attn_tui.sources.probe import probe_ids

        vocab = int(getattr(loaded.model.config, "vocab_size", 0) or len(loaded.tokenizer))
        drawn = probe_ids(probe[0], loaded.tokenizer, vocab, probe[1], probe[2], loaded.positions)
        ids = torch.tensor([drawn], dtype=torch.long)  # (1, N)
        forward = _forward(loaded, {"input_ids": ids, "attention_mask": torch.ones_like(ids)}, "", [], max_memory)
        return replace(forward, probe=probe[0], scored_from=len(drawn) - probe[1])  # the roles read the repeat
    check_prompt(text)
    tok = loaded.tokenizer
    if pad_to is not None and pad_to > loaded.positions:
        raise ConfigError(Msg("--pad-to {n} is more than {model} reads ({positions} tokens)", n=pad_to,
                              model=loaded.name, positions=loaded.positions))
    warnings: list[Msg] = []
    try:
        full = len(tok(text, add_special_tokens=True)["input_ids"])
        if full == 0:
            raise ConfigError(Msg("{model}'s tokenizer made no tokens of this text", model=loaded.name))
        if pad_to is not None and pad_to < full:
            raise ConfigError(Msg("--pad-to {n} is fewer than the text's {full} tokens: padding never cuts", n=pad_to,
                                  full=full))
        if full > loaded.positions:
            warnings.append(Msg("the text is {full} tokens; {model} reads at most {positions}, so the rest was cut",
                                full=full, model=loaded.name, positions=loaded.positions))
        enc = tok(text, return_tensors="pt", truncation=True, max_length=pad_to or loaded.positions,
                  padding="max_length" if pad_to else False)
    except AttnError:
        raise
    except Exception as exc:
        raise InputError(Msg("{model}'s tokenizer cannot read this text: {reason}", model=loaded.name,
                             reason=str(exc).splitlines()[0][:80])) from None
    return _forward(loaded, dict(enc), text, warnings, max_memory)


def _forward(loaded: LoadedModel, enc: dict[str, torch.Tensor], text: str, warnings: list[Msg],
             max_memory: int | None) -> ModelRun:
    """One forward pass over `enc` (input_ids, attention_mask: (1, N) each) with every attention returned."""
    tok = loaded.tokenizer
    n = int(enc["input_ids"].shape[1])
    check_vocabulary(loaded, enc["input_ids"])
    run_estimate(loaded, n).check(memory_limit(max_memory), Msg("running {model} on {n} tokens", model=loaded.name,
                                                                n=n))
    device = loaded.runs_on
    enc = {k: v.to(device) for k, v in enc.items()}
    report(Msg("running {model} on {n} tokens", model=loaded.name, n=n))
    with torch.no_grad(), loaded.running():
        out = loaded.model(**enc, output_attentions=True, output_hidden_states=True)
    ids = enc["input_ids"][0].tolist()
    keep = enc["attention_mask"][0].bool()  # (N,) keys that are real tokens
    mask = keep[None, :].expand(n, n).clone()
    if loaded.causal:
        mask &= torch.ones(n, n, dtype=torch.bool, device=device).tril()
    special_ids = set(tok.all_special_ids)
    raw = tok.convert_ids_to_tokens(ids)
    tokens = tuple(readable_token(tok, t) for t in raw)
    special = tuple(i for i, t in enumerate(ids) if t in special_ids)
    padding = None if bool(keep.all()) else ~keep
    unknown = tok.unk_token_id
    words = [t for n, t in enumerate(ids) if n not in special]
    if unknown is not None and words and sum(t == unknown for t in words) * 2 > len(words):
        warnings.append(Msg("{model}'s tokenizer knows few of these words: {unknown} of {n} tokens are {unk}",
                            model=loaded.name, unknown=sum(t == unknown for t in words), n=len(words),
                            unk=tok.unk_token))
    if _HANGUL.search(text) and any(_JAMO.search(t) for t in raw):
        warnings.append(Msg("{model}'s vocabulary breaks Korean syllables into jamo (separate letters such as ㅎ ㅏ "
                            "ㄱ): its tokens are pieces of letters, not words, so read its Korean attention with care",
                            model=loaded.name))
    hidden, attentions = tuple(h[0] for h in out.hidden_states), tuple(a[0] for a in out.attentions)
    warnings += non_finite(loaded, hidden, attentions)
    return ModelRun(loaded=loaded, tokens=tokens, special=special, hidden_states=hidden, attentions=attentions,
                    mask=mask, padding=padding, warnings=tuple(warnings), ids=tuple(ids))


def readable_token(tok: Any, token: str) -> str:
    """GPT-2's byte-level 'Ġcat' → '▁cat' so a leading space stays visible; a piece of a character
    (a Korean syllable is three byte tokens) shows its bytes, `<EB>`, rather than '�'."""
    text = tok.convert_tokens_to_string([token])
    if "\ufffd" in text:
        from attn_tui.sources.bytelevel import byte_label

        text = byte_label(token) or text
    if text.startswith(" "):
        text = "▁" + text[1:]
    return text.strip() or token


def trace_run(run_: ModelRun, layer: int, head: int) -> Trace:
    """The run as one Trace through its family's adapter; `layer` is computed now, the others when asked for."""
    return traced(run_, layer, head, family_named(run_.loaded.family))


def _quietly(find: Callable[[], Msg | None]) -> Msg | None:
    """What `find` says, or None when it fails itself: a refusal is never lost to the search for its cause."""
    try:
        return find()
    except Exception:
        return None

