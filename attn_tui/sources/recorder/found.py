"""What the recogniser found in one attention call, before it becomes stages: named roles, per slice.

A slice is one (batch item, head) of the call; `n = b * heads + h`. A role's data holds
every slice (or every batch item, for a role the heads share), and its op names other
roles, so the builder can turn it into places and core ops without knowing the patterns.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Union

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.node import Origin, Scope
from attn_tui.sources.recorder.refs import Ref

Param = Union[str, tuple[str, ...]]  # a parameter's name, or one name per slice (heads that are modules of their own)


@dataclass(frozen=True)
class GivenOp:
    """Shown as it is; a subclass with a `core(at, n, h, heads)` method makes its own core op per slice
    (flex_attention's stages, hooks/flex_parts.py), and is a given value to every other pass."""

    what: str | Msg


@dataclass(frozen=True)
class LinearOp:
    source: str
    weight: Param
    bias: Param | None
    offsets: tuple[int, ...]  # per slice: the first row of the weight this slice reads


@dataclass(frozen=True)
class ColumnsOp:
    source: str
    offsets: tuple[int, ...]  # per slice


@dataclass(frozen=True)
class DotOp:
    left: str
    right: str


@dataclass(frozen=True)
class ScaleOp:
    source: str
    factor: float | tuple[float, ...]  # one number, or one per slice (a learned temperature per head)
    reason: str | Msg


@dataclass(frozen=True)
class SoftCapOp:
    source: str
    cap: float  # out = cap · tanh(source / cap)


@dataclass(frozen=True)
class MaskOp:
    source: str
    allowed: torch.Tensor | None  # (n, L, S) bool, True = may attend
    fill: float
    held: torch.Tensor | None = None  # (n, L, S) the code's own mask values as it holds them (True, 1, -1e9)
    rule: str = ""  # how the code applies them: one of masks.CODE_RULES (masked_fill where True, additive, …)
    test: str = ""  # the comparison the code made of its mask ("== 0"), when `held` is the mask it compared
    parts: bool = False  # a kernel's mask (SDPA): told by its reasons (causal, window, padding) when they rebuild it
    told: dict[tuple[object, ...], object] = field(default_factory=dict, compare=False)  # the parts found, per mask


@dataclass(frozen=True)
class SoftmaxOp:
    source: str


@dataclass(frozen=True)
class WeightedSumOp:
    weights: str
    values: str


@dataclass(frozen=True)
class TanhOfSumOp:
    left: str
    right: str


@dataclass(frozen=True)
class TanhOfPairOp:
    query: str
    key: str
    weight: Param
    bias: Param | None


@dataclass(frozen=True)
class ReduceOp:
    source: str
    vector: Param
    bias: Param | None


@dataclass(frozen=True)
class ConcatOp:
    part: str  # the per-head role whose heads are put side by side


@dataclass(frozen=True)
class SumOp:
    parts: tuple[str, ...]


RoleOp = Union[GivenOp, LinearOp, ColumnsOp, DotOp, ScaleOp, SoftCapOp, MaskOp, SoftmaxOp, WeightedSumOp, TanhOfSumOp,
               TanhOfPairOp, ReduceOp, ConcatOp, SumOp]


@dataclass
class Role:
    """One named stage of the call: its data for every slice (or batch item), how it was made, where."""

    name: str
    data: torch.Tensor  # (n, …) per slice, or (batch, …) when shared by the heads
    op: RoleOp
    origin: Origin | None
    formula: str | Msg
    axes: tuple[str, ...]  # per slice: "query", "key", "dim", "hidden", "input", "joined"
    shared: bool = False  # the same for every head of a batch item
    labels: tuple[tuple[str, ...], ...] | None = None  # a label per position of each axis, where the axes are no tokens
    stats: list[Any] | None = None  # per slice, the StageStats of a lazy role (gathered by its streaming pass)


@dataclass
class Found:
    """One recognised attention call: its roles in order, its slices, and the parameters its ops name."""

    scope: Scope
    call: int
    batch: int
    heads: int
    roles: list[Role] = field(default_factory=list)
    params: dict[str, torch.Tensor] = field(default_factory=dict)
    warnings: list[str | Msg] = field(default_factory=list)
    kind: str = "recorded"  # dot | scaled_dot | general | additive | concat | multihead | recorded
    output: Ref | None = None  # (n, L, dv) the output's numbers in the node that made them, when there is one
    counted_as: Scope | None = None  # the scope whose calls were counted, when `scope` is a module gathered from others

    def names(self) -> set[str]:
        return {role.name for role in self.roles}

    def fresh(self, name: str) -> str:
        """`name`, or `name_2`, `name_3`… when the call already has a role of that name."""
        if name not in self.names():
            return name
        n = 2
        while f"{name}_{n}" in self.names():
            n += 1
        return f"{name}_{n}"

    def add(self, role: Role) -> str:
        self.roles.append(role)
        return role.name

    def role(self, name: str) -> Role:
        return next(r for r in self.roles if r.name == name)
