"""A recorded tensor and where it came from: the graph the recorder's ears build and every later pass reads.

It lives apart from the TorchFunctionMode (capture.py) so that the passes that only read the graph (the
memory count in held.py, the recogniser, the layout) do not import the mode that records it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch

from attn_tui.sources.recorder.kinds import VIEWS, After, Kind


@dataclass(frozen=True)
class Origin:
    """The line of the user's code that made a tensor."""

    file: str
    line: int
    code: str

    def __str__(self) -> str:
        return f"{os.path.basename(self.file)}:{self.line}: {self.code}"


@dataclass(frozen=True)
class Scope:
    """Which attention a call belongs to: the user's module (or function), and which instance of it."""

    name: str  # the module's class name, or the function's name
    owner: int  # id of the module instance, or of the function's code
    module: Any = field(default=None, compare=False, repr=False)  # the nn.Module, to name its parameters


@dataclass(eq=False, slots=True)  # slots: hundreds are made per forward, each without a __dict__
class Node:
    """One recorded tensor: what made it, from what, where, and its value (kept as the code computed it).

    Its kind (kinds.py) is what the recognisers ask; its name stays for finer distinctions and the
    formulas. A view (reshape, permute, indexing…) keeps the node it reads from and its arguments; the
    recogniser replays them on an index tensor to know which numbers of that node it holds.
    """

    name: str  # "leaf" for a tensor the recorder did not see being made; else the op's plain name
    kind: Kind = field(kw_only=True)  # what the op does (kinds.py), given once when it is recorded
    value: torch.Tensor
    inputs: tuple[Any, ...] = ()  # args with every recorded tensor replaced by its Node (nested tuples kept)
    kwargs: dict[str, Any] = field(default_factory=dict)
    origin: Origin | None = None
    scope: Scope | None = None
    version: int = 0
    param: str | None = None  # a leaf parameter's name in its module ("Wa.weight"); "" for one no module holds
    is_param: bool = False
    part: int | None = None  # which result of an op that returns several (chunk, unbind)
    after: After | None = None  # its place on the way from an attention onwards (kinds.FORWARD); None: not on it
    consumers: list[Node] = field(default_factory=list)  # kept only on that way
    returned: Any = field(default=None, repr=False)  # MHA: its whole result (output, weights)
    call: int = 0  # the n-th anchor of its scope
    held: int = 0  # bytes an anchor's graph keeps alive (counted only under a budget)

    @property
    def is_view(self) -> bool:
        return self.kind in VIEWS

    def tensors(self) -> list[Node]:
        """The nodes among the inputs, in order (inside tuples and lists too)."""
        found: list[Node] = []
        for arg in (*self.inputs, *self.kwargs.values()):
            for item in arg if isinstance(arg, (tuple, list)) else (arg,):
                if isinstance(item, Node):
                    found.append(item)
        return found

    def stale(self) -> bool:
        """The code changed this tensor in place after it was recorded, without the recorder seeing it."""
        return version_of(self.value) != self.version


def version_of(tensor: torch.Tensor) -> int:
    """How many times a tensor was changed in place; -1 for a tensor made under `torch.inference_mode()`,
    which keeps no count (its in-place changes are still seen, as calls, by the recorder)."""
    try:
        return int(tensor._version)
    except RuntimeError:
        return -1


def walk(roots: Iterable[Node], step: Callable[[Node], Iterable[Node]] = Node.tensors,
         limit: int | None = None) -> Iterator[Node]:
    """Each node reachable from `roots` through `step` (by default back through its inputs) once, depth first, at most
    `limit` of them: the walk every reader of the graph makes (build's layout, held's count, prune's cut)."""
    seen: set[int] = set()
    stack = list(roots)
    while stack and (limit is None or len(seen) < limit):
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        stack.extend(step(node))
