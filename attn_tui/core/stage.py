"""Stage and Trace: the one record of a computation that every view (CLI, app, export) reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import torch


@dataclass(frozen=True)
class Axis:
    """One dimension of a stage's tensor: what it indexes and a label per position.

    Kept beside the tensor so a view never has to guess whether rows are queries,
    keys or feature dimensions.
    """

    name: str  # "query", "key", "token", "dim", "hidden", …
    labels: tuple[str, ...]


def dim_axis(size: int, name: str = "dim", prefix: str = "d") -> Axis:
    """Feature-dimension axis labelled d0, d1, …"""
    return Axis(name, tuple(f"{prefix}{i}" for i in range(size)))


@dataclass(frozen=True)
class Stage:
    """One named step of a variant: its tensor, formula and axes.

    `head` is set for the per-head stages of `multihead`, `step` for the per-decoder-step
    stages of a seq2seq model, and both are None everywhere else.
    """

    name: str
    tensor: torch.Tensor
    formula: str
    axes: tuple[Axis, ...]
    head: int | None = None
    step: int | None = None

    def __post_init__(self) -> None:
        if len(self.axes) != self.tensor.dim():
            raise ValueError(
                f"stage {self.name!r}: {len(self.axes)} axes for a {self.tensor.dim()}-D tensor"
            )

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)

    @property
    def key(self) -> str:
        """Unique id inside a trace, e.g. `weights`, `weights@h1` or `weights@t3`."""
        key = self.name if self.head is None else f"{self.name}@h{self.head}"
        return key if self.step is None else f"{key}@t{self.step}"


@dataclass
class Trace:
    """Ordered stages of one attention computation plus everything needed to redo it.

    `params` holds every learned tensor that was used (seeded), so an exported trace
    can be recomputed elsewhere; `warnings` holds what the user must not miss
    (fully masked rows, overflow, NaN).
    """

    variant: str
    query_tokens: tuple[str, ...]
    key_tokens: tuple[str, ...]
    device: str
    dtype: str
    stages: list[Stage] = field(default_factory=list)
    params: dict[str, torch.Tensor] = field(default_factory=dict)
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)  # typed Q/K/V or X
    mask: torch.Tensor | None = None  # (L, S) bool, True = may attend; None = nothing masked
    warnings: list[str] = field(default_factory=list)
    config: dict[str, object] = field(default_factory=dict)
    heads: int = 1

    def add(self, stage: Stage) -> torch.Tensor:
        """Append a stage and hand its tensor back, so variants read as a chain."""
        self.stages.append(stage)
        return stage.tensor

    def warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)

    def __iter__(self) -> Iterator[Stage]:
        return iter(self.stages)

    def names(self) -> list[str]:
        """Distinct stage names in order (per-head names once)."""
        seen: list[str] = []
        for stage in self.stages:
            if stage.name not in seen:
                seen.append(stage.name)
        return seen

    def stage(self, name: str, head: int | None = None) -> Stage:
        """The stage called `name`; for per-head stages `head` picks one (default 0)."""
        matches = [s for s in self.stages if s.name == name]
        if not matches:
            raise KeyError(name)
        if matches[0].head is None:
            return matches[0]
        wanted = 0 if head is None else head
        for s in matches:
            if s.head == wanted:
                return s
        raise KeyError(f"{name}@h{wanted}")

    def tensor(self, name: str, head: int | None = None) -> torch.Tensor:
        return self.stage(name, head).tensor

    def steps(self) -> int:
        """Number of decoder steps (seq2seq traces); 0 for a single attention."""
        return 1 + max((s.step for s in self.stages if s.step is not None), default=-1)

    def tensor_at(self, name: str, step: int) -> torch.Tensor:
        """The tensor of stage `name` at decoder step `step`."""
        for s in self.stages:
            if s.name == name and s.step == step:
                return s.tensor
        raise KeyError(f"{name}@t{step}")
