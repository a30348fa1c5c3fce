"""A loaded model and one forward pass over a text: what every family adapter and the shared tracer read.

Its own module, below `sources.hf` (which loads and runs) and `sources.families` (which read the run into
stages), so the two do not import each other; `sources.hf` re-exports both names.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

import torch

from attn_tui.ask.model_request import check_prompt
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.sources.offload import HOOKS, materialised


@dataclass(kw_only=True)
class LoadedModel:
    """A model ready to trace: its tokenizer, family adapter and sizes."""

    name: str
    model: Any  # a transformers PreTrainedModel: its submodules are read by attribute
    tokenizer: Any
    family: str  # the name of the family adapter that reads it (sources/families/<name>.py)
    layers: int
    heads: int
    causal: bool
    positions: int  # the most tokens the model reads
    width: int  # hidden size
    offloaded: tuple[str, ...] = ()  # where accelerate offloaded each layer: "" (not), "cpu" or "disk"; () when none
    blocks: str | None = None  # the qualified name of the model's list of layers (`layers`, `encoder.layer`, `h`)
    device: str = "cpu"  # where the model runs (an offloaded layer is read in there while it runs)

    @property
    def runs_on(self) -> torch.device:
        """Where the model computes: an offloaded model's first parameter may be on the meta device, so it runs
        where its loader said."""
        return torch.device(self.device) if self.offloaded else next(self.model.parameters()).device

    def in_memory(self, layer: int) -> AbstractContextManager[None]:
        """Within it, layer `layer`'s weights are in memory: an offloaded layer's are read in for whatever reads
        them (a family adapter, a stepper) and let go after; a layer in memory is left as it is."""
        return materialised(self.model, self.blocks, layer)

    def running(self) -> AbstractContextManager[object]:
        """Around a forward pass: an offloaded model's hooks take turns with a layer being read elsewhere."""
        return HOOKS if self.offloaded else nullcontext()


@dataclass(kw_only=True)
class ModelRun:
    """One forward pass over one text; traces for any layer and head are cut from it."""

    loaded: LoadedModel
    tokens: tuple[str, ...]
    special: tuple[int, ...]  # positions of special tokens ([CLS], [SEP], [PAD], …)
    hidden_states: tuple[torch.Tensor, ...]  # each (N, d): the input of layer i is [i]
    attentions: tuple[torch.Tensor, ...]  # each (heads, N, N): the model's own weights
    mask: torch.Tensor  # (N, N) bool, True = may attend
    padding: torch.Tensor | None  # (N,) bool, True = a padding key; None when there is none
    warnings: tuple[Msg, ...] = ()
    ids: tuple[int, ...] = ()  # the token ids fed, one per position: what the head roles compare (two ids can
    # print as the same string)
    probe: str = ""  # the built-in probe fed instead of a text ("" for a text)
    scored_from: int = 0  # the first query row the head roles score (a probe's repeated half)

    @classmethod
    def of_inputs(cls, loaded: LoadedModel, tokens: tuple[str, ...], special: tuple[int, ...],
                  hidden_states: tuple[torch.Tensor, ...], mask: torch.Tensor) -> ModelRun:
        """A run made of layer inputs alone (a written step, what a cache holds): none of the model's own
        weights to compare with, and no padding."""
        return cls(loaded=loaded, tokens=tokens, special=special, hidden_states=hidden_states, attentions=(),
                   mask=mask, padding=None)


def non_finite(loaded: LoadedModel, hidden: tuple[torch.Tensor, ...], attentions: tuple[torch.Tensor, ...]
               ) -> list[Msg]:
    """Where the forward pass first went NaN or infinite, named, so no stage traced from it is silently NaN: the
    first layer whose input (hidden[i], (N, d)) or whose own weights (attentions[i], (heads, N, N)) are not finite."""
    for layer in range(loaded.layers):
        if not bool(torch.isfinite(hidden[layer]).all()):
            return [Msg("layer {layer}'s input holds NaN or infinite values ({dtype} overflowed, or a weight before it "
                        "is not finite): every stage from this layer on is not a number", layer=layer,
                        dtype=str(hidden[layer].dtype).replace("torch.", ""))]
        if layer < len(attentions) and not bool(torch.isfinite(attentions[layer]).all()):
            finite = torch.isfinite(attentions[layer]).flatten(1).all(dim=1)  # (heads,)
            heads = [h for h in range(finite.shape[0]) if not bool(finite[h])]
            return [Msg("layer {layer}'s weights hold NaN or infinite values in heads {heads}: its scores overflowed "
                        "or a weight of its attention is not finite", layer=layer, heads=", ".join(map(str, heads)))]
    if len(hidden) > loaded.layers and not bool(torch.isfinite(hidden[loaded.layers]).all()):  # the last's output
        return [Msg("the last layer's output holds NaN or infinite values")]
    return []


def check_vocabulary(loaded: LoadedModel, ids: torch.Tensor) -> None:
    """Every token id the tokenizer made is a row of the model's embedding: a folder whose tokenizer knows more
    tokens than its config's vocab_size would fail deep in the embedding's lookup."""
    vocab = int(getattr(loaded.model.config, "vocab_size", 0) or 0)
    largest = int(ids.max()) if ids.numel() else -1
    if vocab and largest >= vocab:
        raise ConfigError(Msg("{model}'s tokenizer made token id {id}, but its config.json has vocab_size {vocab}: the "
                             "tokenizer and the model do not belong together", model=loaded.name, id=largest,
                             vocab=vocab))


def prompt_ids(loaded: LoadedModel, text: str) -> list[int]:
    """The ids a model writes after: the text tokenised with its special tokens, each a row of its embedding."""
    check_prompt(text)
    found = list(loaded.tokenizer(text, add_special_tokens=True)["input_ids"])
    if not found:
        raise ConfigError(Msg("{model}'s tokenizer made no tokens of this text", model=loaded.name))
    check_vocabulary(loaded, torch.tensor(found))
    return found
