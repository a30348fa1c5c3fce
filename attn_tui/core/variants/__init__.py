"""The registry of attention variants: name → how to run it and which stages it makes."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from attn_tui.core.variants import additive, concat, dot, general, multihead, scaled_dot


@dataclass(frozen=True)
class Variant:
    """One variant: its stage names (after the input stages) and its run function.

    `same_width`: Q and K must share their last dimension (no learned projection
    between them). `takes_x`: projects Q, K, V itself from one X (multihead).
    """

    name: str
    title: str
    stages: tuple[str, ...]
    run: Callable[..., object]
    same_width: bool = True
    takes_x: bool = False
    has_energy: bool = False


VARIANTS: dict[str, Variant] = {
    v.name: v
    for v in (
        Variant("dot", "Dot product", dot.STAGES, dot.run),
        Variant("scaled_dot", "Scaled dot product", scaled_dot.STAGES, scaled_dot.run),
        Variant("general", "Luong general (bilinear)", general.STAGES, general.run, same_width=False),
        Variant("additive", "Bahdanau additive", additive.STAGES, additive.run, same_width=False,
                has_energy=True),
        Variant("concat", "Concat", concat.STAGES, concat.run, same_width=False, has_energy=True),
        Variant("multihead", "Multi-head", multihead.STAGES, multihead.run, takes_x=True),
    )
}
