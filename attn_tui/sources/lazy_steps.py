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

from attn_tui.i18n import Msg
from attn_tui.sources.cache_stage import record_cache
from attn_tui.sources.families.shared.tracer import record_layer
from attn_tui.sources.families.spec import Family, OwnStep
from attn_tui.sources.model_run import LoadedModel, ModelRun
from attn_tui.trace.ops import Place, Written
from attn_tui.trace.stage import Axis, Stage, Trace


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
    own: list[OwnStep | None] = field(default_factory=list)  # per layer: how it writes where it keeps its own cache
    held: list[list[tuple[torch.Tensor, torch.Tensor] | None]] = field(default_factory=list)  # per step, per layer
    sizes: list[tuple[int, int]] = field(default_factory=list)  # per step: (positions so far, query rows)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def kept(self, held: list[tuple[torch.Tensor, torch.Tensor] | None], positions: int, queries: int) -> None:
        """A step was written: its cache (per layer) and its size."""
        self.held.append(held)
        self.sizes.append((positions, queries))

    def __call__(self, trace: Trace, layer: int, step: int, name: str | None = None) -> None:
        """Trace `layer` at `step` into `trace` (only its rows written so far when `name` asks for those), unless
        it is there already or `trace` has no such step."""
        if not 0 <= layer < self.loaded.layers or not 0 <= step < len(self.sizes):
            return
        if Place("weights", layer, 0, step) not in trace.stages:
            return
        if name == "written":
            self.written(trace, layer, step)
            return
        if Place("query", layer, 0, step) in trace.stages:
            return
        with self.lock, torch.no_grad():
            if Place("query", layer, 0, step) in trace.stages:  # another thread traced it meanwhile
                return
            n, queries = self.sizes[step]
            hidden = torch.cat(self.inputs[layer][:step + 1])  # (n, d): what the layer read up to this step
            view = ModelRun.of_inputs(self.loaded, tuple(self.tokens[:n]), tuple(p for p in self.special if p < n),
                                      (hidden,) * self.loaded.layers,
                                      torch.ones(n, n, dtype=torch.bool, device=hidden.device).tril())
            shown = {place: stage for place, stage in trace.stages.items()
                     if place.layer == layer and place.step == step}  # the published weights stay on show
            mask, geometry = trace.layer_masks.get(layer), trace.geometry.get(layer)
            own = self.own[layer] if self.own else None
            cache = self.held[step][layer]
            with self.loaded.in_memory(layer):
                if own is not None:  # DeepSeek's latent: the layer records itself
                    own.record(trace, view, step, queries)
                else:
                    spec = self.family.layer(view, layer)
                    record_layer(trace, spec, layer, view, self.grouped, step=step, queries=queries)
                    for part in self.family.after_heads:
                        part.record(trace, spec, layer, view, step, queries)
                    if cache is not None:
                        labels = tuple(f"{p}:{token}" for p, token in enumerate(self.tokens[:n]))
                        record_cache(trace, cache, layer, step, spec.window, labels, self.loaded.heads)
            trace.stages.update(shown)
            if geometry is not None:
                trace.geometry[layer] = geometry
            trace.layer_masks[layer] = mask

    def written(self, trace: Trace, layer: int, step: int) -> None:
        """Stage `written` of every head of `layer` at `step` ≥ 1: the one weights row of each step 1…step, one
        under the other (query: the token each step fed; keys: every position so far, 0 right of a row's last)."""
        if step < 1 or Place("written", layer, 0, step) in trace.stages:
            return
        n, prompt = self.sizes[step][0], self.sizes[0][0]
        axes = (Axis("query", tuple(self.tokens[prompt - 1 + s] for s in range(1, step + 1))),
                Axis("key", tuple(self.tokens[:n])))
        for head in range(self.loaded.heads):
            places = [Place("weights", layer, head, s) for s in range(1, step + 1)]
            parts = [trace.stages[place].tensor[-1] for place in places]  # (keys of step s,) each
            rows = torch.zeros(step, n, dtype=parts[0].dtype, device=parts[0].device)  # (step, n)
            for r, part in enumerate(parts):
                rows[r, :part.shape[0]] = part
            at = Place("written", layer, head, step)
            trace.stages[at] = Stage(at, rows, written_formula(step, n), axes,
                                     Written(tuple((place, 0) for place in places)))


def written_formula(rows: int, keys: int) -> Msg:
    return Msg("A_≤t: the weights rows written so far, one under the other ({rows} generated tokens × {keys} keys); "
               "row r is step r + 1's one row, 0 right of the keys it had", rows=rows, keys=keys)


def record_prompt_rows(trace: Trace, layer: int, heads: int) -> None:
    """Stage `written` at step 0: the prompt's rows, as the prefill wrote them."""
    for head in range(heads):
        weights = trace.stages[Place("weights", layer, head, 0)]
        rows = weights.shape[0]
        trace.stages[weights.place.at("written")] = Stage(
            weights.place.at("written"), weights.tensor, Msg(
                "A_≤t: the weights rows written so far: at the first step the prompt's {rows} rows over its own "
                "keys", rows=rows), weights.axes, Written(tuple((weights.place, r) for r in range(rows))))
