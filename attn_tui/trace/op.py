"""The base every op derives from: plain data naming how a stage's numbers were made.

An op is declared where its idea lives: the shared ones in `trace.ops`, a variant's own beside its math
(`attention/variants/<name>/__init__.py`). What the trace itself must know of an op is a class flag here, so
the trace never names a variant's op.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, Protocol

if TYPE_CHECKING:
    from attn_tui.trace.masks import MaskSpec


class Op:
    """How a stage was made. Subclasses are frozen dataclasses; `attn_tui.explain` holds one explainer each.

    `masks`: the op applies the mask itself and holds it as `mask`, `fill` and `temperature` (a masked stage,
    a flash tile's scores), so the stages made from it keep its mask. `starts_infinite`: −∞ is the op's start,
    not an overflow (an online softmax's running max before its row has seen a key).
    """

    __slots__ = ()
    masks: ClassVar[bool] = False
    starts_infinite: ClassVar[bool] = False


class MaskingOp(Protocol):
    """What an op whose class says `masks` holds: the mask it applied, its fill and the temperature before it."""

    mask: MaskSpec | None
    fill: str
    temperature: float
