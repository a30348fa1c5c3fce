"""Where a stage sits in a trace: its Place, and an operand (a stage's place or an input's name)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union


@dataclass(frozen=True, order=True)
class Place:
    """Where a stage sits, TransformerLens-style: (layer, head, step, name, module).

    `layer` is a transformer block, `head` an attention head, `step` a decoder step or
    a flash tile, `module` which attention of a block it is when a block has several
    (an encoder-decoder's `self_attn` and `cross_attn`, a recorded module's name); each is
    None where the source has no such axis.
    """

    name: str
    layer: int | None = None
    head: int | None = None
    step: int | None = None
    module: str | None = None

    @property
    def key(self) -> str:
        """`weights`, `weights@h1`, `blocks.2.attn.weights@h5`, `blocks.0.cross_attn.weights@h1@t3`, `enc.weights`:
        unique within a trace."""
        if self.layer is not None:
            key = f"blocks.{self.layer}.{self.module or 'attn'}.{self.name}"
        else:
            key = self.name if self.module is None else f"{self.module}.{self.name}"
        key += "" if self.head is None else f"@h{self.head}"
        return key + ("" if self.step is None else f"@t{self.step}")

    def at(self, name: str) -> Place:
        """The stage called `name` at the same layer, head, step and module."""
        return Place(name, self.layer, self.head, self.step, self.module)


Operand = Union[Place, str]  # a stage, or the name of an input ("X") of the trace
