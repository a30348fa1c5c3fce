"""Stage and Trace: the one record of a computation that every view (CLI, app, export) reads.

A stage is addressed by its Place (layer, head, step, name), so one transformer run is
one Trace holding every layer and head it has computed; a source may compute the rest
on demand through the trace's `filler`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import cast

import torch

from attn_tui.i18n import Msg
from attn_tui.trace.axes import Axis as Axis
from attn_tui.trace.axes import dim_axis as dim_axis
from attn_tui.trace.by_place import ByPlace
from attn_tui.trace.catalog import symbol
from attn_tui.trace.geometry import LayerGeometry
from attn_tui.trace.lazy import LazyTensor
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.meta import RunMeta
from attn_tui.trace.op import MaskingOp
from attn_tui.trace.ops import Given, Op, Place, Scale, Softmax
from attn_tui.trace.stage_stats import StageStats
from attn_tui.trace.steps import Step, Steps


@dataclass(frozen=True, eq=False)
class Stage:
    """One step of a computation: where it sits, its values, formula, axes and how it was made.

    `data` is a tensor, or for the score stages of a long input a LazyTensor that computes
    any tile on demand; `tensor` gives the whole stage (refused for a lazy stage too
    large to hold), `row`, `value` and the tensor-style indexing of `data` give parts.
    """

    place: Place
    data: torch.Tensor | LazyTensor
    formula: str | Msg  # the formula and its caption; a Msg reads in the language on show
    axes: tuple[Axis, ...]
    op: Op = Given("given as is")
    origin: str | None = None  # the line of the user's code that made it ("attn.py:31: scores = …"), when recorded

    def __post_init__(self) -> None:
        if len(self.axes) != self.data.dim():
            raise ValueError(f"stage {self.place.key!r}: {len(self.axes)} axes for a {self.data.dim()}-D tensor")

    @property
    def lazy(self) -> bool:
        return isinstance(self.data, LazyTensor)

    @property
    def tensor(self) -> torch.Tensor:
        """The whole stage as a tensor (a lazy stage is computed whole, if it is small enough)."""
        return self.data.whole() if isinstance(self.data, LazyTensor) else self.data

    def row(self, i: int) -> torch.Tensor:
        """Slice i along the first axis: a query's row of scores, one energy slice."""
        return self.data[i]

    def value(self, index: tuple[int, ...]) -> float:
        return float(self.data[index].double())

    @property
    def name(self) -> str:
        return self.place.name

    @property
    def layer(self) -> int | None:
        return self.place.layer

    @property
    def head(self) -> int | None:
        return self.place.head

    @property
    def step(self) -> int | None:
        return self.place.step

    @property
    def key(self) -> str:
        return self.place.key

    @property
    def symbol(self) -> str:
        return symbol(self.name)

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)


Filler = Callable[["Trace", "int | None", "int | None"], None]
# (trace, layer, step, name): that layer's stages at a written step (only the stage `name` where that is enough)
StepFiller = Callable[["Trace", int, int, "str | None"], None]


@dataclass(eq=False)
class Trace:
    """Stages of one attention computation by place, plus everything needed to redo it.

    `params` holds every learned tensor that was used, so an exported trace can be
    recomputed elsewhere; `warnings` holds what the user must not miss (fully masked
    rows, overflow, NaN); `meta` says what was run. `filler(trace, layer, head)`, when a
    source sets it, adds the stages of a layer and head not computed yet.
    """

    meta: RunMeta
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    device: str
    dtype: str
    stages: ByPlace[Stage] = field(default_factory=ByPlace)  # kept per step: a grown trace shares the earlier
    params: dict[str, torch.Tensor] = field(default_factory=dict)
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)  # typed Q/K/V or X
    mask: MaskSpec | None = None  # the variant's mask (1 = may attend); None = nothing masked
    warnings: list[str | Msg] = field(default_factory=list)  # read with str(): a Msg in the language on show
    filler: Filler | None = field(default=None, repr=False)
    stats: ByPlace[StageStats] = field(default_factory=ByPlace, repr=False)  # see trace.values
    geometry: dict[int, LayerGeometry] = field(default_factory=dict)  # per layer, as each layer was traced
    layer_masks: dict[int, MaskSpec | None] = field(default_factory=dict)  # a layer's own mask, where it has one
    step_axis: Steps | None = None  # what the steps of its places are (trace.steps), when it has steps
    version: int = 0  # how many times it grew: a grown trace is a new object with the next version
    # a model writing keeps each step's weights and traces the rest of a layer's step when it is asked for
    step_filler: StepFiller | None = field(default=None, repr=False)

    def add(self, stage: Stage) -> torch.Tensor:
        """Record a whole stage and hand its tensor back, so sources read as a chain."""
        assert isinstance(stage.data, torch.Tensor), "a lazy stage is recorded with put()"
        self.stages[stage.place] = stage
        return stage.data

    def put(self, stage: Stage) -> None:
        """Record a stage, lazy or whole."""
        self.stages[stage.place] = stage

    def copy(self) -> Trace:
        """A trace with the same stages that later `add`s to this one do not reach (a snapshot to publish)."""
        return replace(self, stages=self.stages.copy(), inputs=dict(self.inputs), warnings=list(self.warnings),
                       stats=self.stats.copy())

    def grown(self, step: Step, stages: Sequence[Stage], meta: RunMeta | None = None,
              query_tokens: tuple[str, ...] | None = None, inputs: Mapping[str, torch.Tensor] | None = None) -> Trace:
        """This trace with one more step and that step's stages, as a new trace; this one is left as it is.

        Whoever holds this trace (a view on another thread) sees the old steps or, once handed the new
        trace, all of the new one: never half a step. The earlier steps' stages and statistics are shared, not
        copied (`ByPlace`): a step costs what it adds.
        """
        axis = (self.step_axis or Steps(step.kind)).plus(step)
        added: dict[Place, Stage] = {}
        for stage in stages:
            if stage.place.step != step.index or stage.place in self.stages or stage.place in added:
                raise ValueError(f"stage {stage.place.key!r} is not a new stage of step {step.index}")
            added[stage.place] = stage
        return replace(self, meta=self.meta if meta is None else meta,
                       query_tokens=self.query_tokens if query_tokens is None else query_tokens,
                       stages=self.stages.plus(step.index, added), inputs={**self.inputs, **(inputs or {})},
                       warnings=list(self.warnings), stats=self.stats.plus(step.index, {}), step_axis=axis,
                       version=self.version + 1)

    def warn(self, message: str | Msg) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.stages.values())

    def __len__(self) -> int:
        return len(self.stages)

    def __getitem__(self, name: str) -> torch.Tensor:
        """`trace["weights"]`: the tensor of the first stage of that name (layer 0, head 0, step 0)."""
        return self.stage(name).tensor

    @property
    def layers(self) -> int:
        return self.meta.layers

    @property
    def heads(self) -> int:
        return self.meta.heads

    def heads_at(self, layer: int | None) -> int:
        """How many heads layer `layer` has: its own count where the run's layers differ (a Qwen3-Next linear
        layer's value heads), else the run's; None: the most any layer has."""
        own = self.meta.layer_heads
        if layer is None:
            return max((self.meta.heads, *own))
        return own[layer] if 0 <= layer < len(own) else self.meta.heads

    def names(self) -> list[str]:
        """Distinct stage names in order (per-head and per-step names once)."""
        return list(dict.fromkeys(place.name for place in self.stages))

    def steps(self) -> int:
        """Number of steps (decoder steps, tiles, recorded calls: `step_axis` says which); 0 for a single
        attention."""
        return 1 + max((p.step for p in self.stages if p.step is not None), default=-1)

    def fill(self, layer: int | None, head: int | None) -> None:
        """Make sure the stages of (layer, head) exist, computing them through the source if needed."""
        if self.filler is not None and not any(p.layer == layer and p.head == head for p in self.stages):
            self.filler(self, layer, head)

    def fill_step(self, layer: int | None, step: int | None, name: str | None = None) -> None:
        """Make sure the stages of `layer` at `step` exist (`name`'s, or every one): a written step traces the
        rest of a layer when asked; nothing to do for a trace whose stages are all there."""
        if self.step_filler is not None and layer is not None and step is not None:
            self.step_filler(self, layer, step, name)

    def fill_steps(self, layer: int | None = None) -> None:
        """Every stage of every step of `layer` (of every layer when None): what an export writes."""
        if self.step_filler is None:
            return
        for step in range(self.steps()):
            for at in range(self.layers) if layer is None else (layer,):
                self.step_filler(self, at, step, None)

    def at(self, place: Place) -> Stage:
        """The stage at `place`, tracing its layer's step first where it was left to be asked for."""
        found = self.stages.get(place)
        if found is None:
            self.fill_step(place.layer, place.step, place.name)
            found = self.stages[place]
        return found

    def find(self, name: str, layer: int | None = None, head: int | None = None,
             step: int | None = None, module: str | None = None) -> Stage | None:
        """The stage `name` at the given place; an axis left None means "the first there is"."""
        found = self._find(name, layer, head, step, module)
        if found is None and self.step_filler is not None and layer is not None and step is not None:
            self.fill_step(layer, step, name)
            found = self._find(name, layer, head, step, module)
        return found

    def _find(self, name: str, layer: int | None, head: int | None, step: int | None,
              module: str | None) -> Stage | None:
        if layer is not None or head is not None:
            self.fill(layer if layer is not None else 0 if self.layers > 1 else None, head)
        exact = self.stages.get(Place(name, layer, head, step, module))
        if exact is not None:
            return exact
        for place, stage in self.stages.items():
            if place.name != name:
                continue
            if (layer is None or place.layer in (None, layer)) and (head is None or place.head in (None, head)) \
                    and (step is None or place.step in (None, step)) and (module is None or place.module == module):
                return stage
        return None

    def stage(self, name: str, layer: int | None = None, head: int | None = None, step: int | None = None,
              module: str | None = None) -> Stage:
        """Like `find`, but a missing stage is a KeyError naming the place."""
        found = self.find(name, layer, head, step, module)
        if found is None:
            raise KeyError(Place(name, layer, head, step, module).key)
        return found

    def tensor(self, name: str, layer: int | None = None, head: int | None = None,
               step: int | None = None, module: str | None = None) -> torch.Tensor:
        return self.stage(name, layer, head, step, module).tensor

    def modules(self) -> list[str | None]:
        """The attention modules of the trace in order ([None] when there is only the one)."""
        return list(dict.fromkeys(place.module for place in self.stages))

    def masking(self, stage: Stage) -> MaskingOp | None:
        """The masking that shaped a stage: its own (masked, a flash tile's scores), or its source's (the
        weights of a masked stage).

        Recorded code may scale after it masks (`masked_fill(…) / 2`): a scaling keeps the mask of its source.
        """
        op = stage.op
        for _ in range(8):
            if not isinstance(op, (Softmax, Scale)):
                break
            source = self.stages.get(op.source)
            if source is None and self.step_filler is not None:
                self.fill_step(op.source.layer, op.source.step, op.source.name)
                source = self.stages.get(op.source)
            if source is None:
                break
            op = source.op
        return cast("MaskingOp", op) if op.masks else None

    def mask_of(self, stage: Stage | int) -> MaskSpec | None:
        """The mask of `masking(stage)`, or None when nothing was masked; given a layer, that layer's mask
        (its own where the layers differ, else the trace's)."""
        if isinstance(stage, int):
            if stage not in self.layer_masks:
                self.fill(stage, 0)
            return self.layer_masks.get(stage, self.mask)
        masking = self.masking(stage)
        return None if masking is None else masking.mask

    def geometry_of(self, layer: int) -> LayerGeometry | None:
        """The layer's geometry (mask, window, positions, scale, cap), computing the layer if needed."""
        if layer not in self.geometry:
            self.fill(layer, 0)
        return self.geometry.get(layer)

    def operand(self, ref: Place | str) -> torch.Tensor:
        """The tensor an op refers to: a stage by place, or an input by name."""
        return self.inputs[ref] if isinstance(ref, str) else self.at(ref).tensor

    @property
    def lazy(self) -> bool:
        """Some stage is read by tiles only (a long input)."""
        return any(stage.lazy for stage in self.stages.values())
