"""A written step's stages beyond its weights, traced by the one shared tracer when a view asks for them.

Writing keeps, per step, only what the step's other stages are made from: each layer's input rows (the
model's hidden states), the key/value cache as it stood, and how many positions had queried. Asked for a
layer at a step (`Trace.fill_step`), `StepStages` traces that layer exactly as a forward pass over the text so
far would, its query rows the step's own, and records its cache; the step's weights, published when it was
written (step_rows.py), stay the stages on show.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import torch

from attn_tui.sources.cache_stage import record_cache
from attn_tui.sources.families.spec import Family
from attn_tui.sources.families.tracer import record_layer
from attn_tui.sources.model_run import LoadedModel, ModelRun
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Trace


@dataclass
class StepStages:
    """What a writing keeps to trace any layer of any of its steps later (every list grows a step at a time,
    appended by the writer only, so a view on another thread reads what was there when it asked)."""

    loaded: LoadedModel
    family: Family
    grouped: bool
    tokens: list[str]  # every token so far, the prompt's first
    special: tuple[int, ...]  # positions of the prompt's special tokens
    inputs: list[list[torch.Tensor]]  # per layer, each step's input rows (rows, d)
    held: list[list[tuple[torch.Tensor, torch.Tensor]]] = field(default_factory=list)  # per step, per layer
    sizes: list[tuple[int, int]] = field(default_factory=list)  # per step: (positions so far, query rows)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kept(self, held: list[tuple[torch.Tensor, torch.Tensor]], positions: int, queries: int) -> None:
        """A step was written: its cache (per layer) and its size."""
        self.held.append(held)
        self.sizes.append((positions, queries))

    def __call__(self, trace: Trace, layer: int, step: int) -> None:
        """Trace `layer` at `step` into `trace`, unless it is there already or `trace` has no such step."""
        if not 0 <= layer < self.loaded.layers or not 0 <= step < len(self.sizes):
            return
        if Place("query", layer, 0, step) in trace.stages or Place("weights", layer, 0, step) not in trace.stages:
            return
        with self.lock, torch.no_grad():
            if Place("query", layer, 0, step) in trace.stages:  # another thread traced it meanwhile
                return
            n, queries = self.sizes[step]
            hidden = torch.cat(self.inputs[layer][:step + 1])  # (n, d): what the layer read up to this step
            view = ModelRun(self.loaded, tuple(self.tokens[:n]), tuple(p for p in self.special if p < n),
                            (hidden,) * self.loaded.layers, (),
                            torch.ones(n, n, dtype=torch.bool, device=hidden.device).tril(), None)
            shown = {place: stage for place, stage in trace.stages.items()
                     if place.layer == layer and place.step == step}  # the published weights stay on show
            mask, geometry = trace.layer_masks.get(layer), trace.geometry.get(layer)
            spec = self.family.layer(view, layer)
            record_layer(trace, spec, layer, view, self.grouped, step=step, queries=queries)
            labels = tuple(f"{p}:{token}" for p, token in enumerate(self.tokens[:n]))
            record_cache(trace, self.held[step][layer], layer, step, spec.window, labels, self.loaded.heads)
            trace.stages.update(shown)
            if geometry is not None:
                trace.geometry[layer] = geometry
            trace.layer_masks[layer] = mask
