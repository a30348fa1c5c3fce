"""Real Hugging Face transformers (MiniLM, any local BERT- or GPT-2-style folder) as a source."""

from __future__ import annotations

import os
import re
from functools import lru_cache

from attn_tui.ask.model_request import check_prompt
from attn_tui.ask.settings import Ask, ModelAsk
from attn_tui.errors import AttnError
from attn_tui.sources import hf
from attn_tui.trace.stage import Trace

_STAMPS: dict[str, tuple[tuple[str, int, int], ...]] = {}  # by name: the folder's files as last loaded
STAMPED = re.compile(r"config\.json$|tokenizer|\.safetensors|\.bin$|vocab|merges")  # what a load reads


def _stamp(name: str) -> tuple[tuple[str, int, int], ...]:
    """The files a load reads, by name, size and time of change ((): not a folder here)."""
    from attn_tui.sources.folder import resolve

    try:
        with os.scandir(resolve(name)) as entries:
            return tuple(sorted((e.name, e.stat().st_size, e.stat().st_mtime_ns) for e in entries
                                if STAMPED.search(e.name) and e.is_file()))
    except (AttnError, OSError):
        return ()


def fresh(name: str) -> None:
    """A folder whose files changed since it was loaded (config.json edited, the weights replaced) is loaded
    again: the loads below are cached by name."""
    stamp = _stamp(name)
    if _STAMPS.get(name, stamp) != stamp:
        loaded_model.cache_clear()
        model_run.cache_clear()
    _STAMPS[name] = stamp


@lru_cache(maxsize=4)
def loaded_model(name: str, device: str, max_memory: int | None) -> hf.LoadedModel:
    from attn_tui.attention.device import resolve_device

    return hf.load(name, resolve_device(device), max_memory)


@lru_cache(maxsize=8)
def model_run(name: str, text: str, pad_to: int | None = None, device: str = "auto",
              max_memory: int | None = None, probe: tuple[str, int, int] | None = None) -> hf.ModelRun:
    """A transformer's forward pass over `text`: every layer and head from one run."""
    check_prompt(text, probe)
    return hf.run(loaded_model(name, device, max_memory), text, pad_to, max_memory, probe)


class TransformerSource:
    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, ModelAsk)

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        assert isinstance(ask, ModelAsk)
        fresh(ask.name)
        return hf.trace_run(model_run(ask.name, ask.text, ask.pad_to, ask.device, max_memory, ask.probed),
                        ask.layer, ask.head)
