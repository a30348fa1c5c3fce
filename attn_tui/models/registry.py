"""One door to every model the CLI and the app can open, by name or path.

Loaded models are cached, so switching layer, head or sentence in the app never loads
the weights twice.
"""

from __future__ import annotations

from functools import lru_cache

from attn_tui.core.settings import MODEL_NAMES as BUILTIN
from attn_tui.core.settings import SEQ2SEQ_MODELS as SEQ2SEQ
from attn_tui.core.settings import ModelInput
from attn_tui.core.stage import Trace


def is_seq2seq(name: str) -> bool:
    return name in SEQ2SEQ


@lru_cache(maxsize=4)
def _hf(name: str, device: str, max_memory: int | None):
    from attn_tui.core.device import resolve_device
    from attn_tui.models import hf

    return hf.load(name, resolve_device(device), max_memory)


@lru_cache(maxsize=2)
def _seq2seq(name: str):
    from attn_tui.models.seq2seq.train import load_shipped

    return load_shipped(SEQ2SEQ[name])


@lru_cache(maxsize=8)
def model_run(name: str, text: str, pad_to: int | None = None, device: str = "auto", max_memory: int | None = None):
    """A transformer's forward pass over `text` (hf.ModelRun): every layer and head from one run."""
    from attn_tui.models import hf

    return hf.run(_hf(name, device, max_memory), text, pad_to, max_memory)


def model_trace(name: str, text: str, layer: int = 0, head: int = 0, pad_to: int | None = None,
                target: str | None = None, teacher_forcing: bool = False, device: str = "auto",
                max_memory: int | None = None) -> Trace:
    """The trace of one transformer head, or of a seq2seq decode, for `text`."""
    if is_seq2seq(name):
        from attn_tui.models.seq2seq.decode import decode_trace

        return decode_trace(_seq2seq(name), text, target, teacher_forcing, name)
    return model_run(name, text, pad_to, device, max_memory).trace(layer, head)


def trace_for(model: ModelInput, device: str = "auto", max_memory: int | None = None) -> Trace:
    """`model_trace` for a ModelInput, as samples and the app hold it."""
    return model_trace(model.name, model.text, model.layer, model.head, model.pad_to, model.target,
                       model.teacher_forcing, device, max_memory)
