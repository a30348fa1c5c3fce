"""Per-layer geometry: which keys a layer's queries see, how positions enter, the scale and the soft cap.

A model whose layers alternate sliding and global windows, or change their rotary base
from layer to layer, cannot be told by one trace-wide mask: each layer carries its own
small frozen record, and a head its own where it differs from its layer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Positional:
    """How positions enter the scores: none, added to the input (absolute), or q and k turned (rotary)."""

    kind: str = "none"  # none | absolute | rotary | alibi (a per-head distance bias: each head's slope)
    base: float = 0.0  # rotary: θ_i = base^(−2i/d_rot)
    fraction: float = 1.0  # rotary: the share of a head's dimensions that is turned
    interleaved: bool = False  # rotary: pairs (2i, 2i+1) rather than Llama's rotate-half (i, i + d/2)


@dataclass(frozen=True)
class HeadGeometry:
    """What one head does differently from its layer (None: as the layer)."""

    head: int
    scale: float | None = None
    soft_cap: float | None = None
    window: int | None = None
    slope: float | None = None  # ALiBi: the head's slope m_h on −|i − j|


@dataclass(frozen=True)
class LayerGeometry:
    """One layer's attention shape: its mask and window, positional scheme, scale and soft cap."""

    mask: str  # full | causal | sliding (a causal window) | custom (a typed 0/1 matrix)
    window: int | None  # sliding: query i sees keys i − window < j ≤ i; None: every allowed key (global)
    positional: Positional
    scale: float  # the factor on q·k
    soft_cap: float | None = None  # scores become cap·tanh(s / cap); None: no cap
    heads: tuple[HeadGeometry, ...] = ()  # only the heads that differ
    temperature: float = 1.0  # divides every score (bias included) before the softmax; 1: as the model was written
    sink: bool = False  # a learned sink logit per head joins each row's softmax (GPT-OSS)
    scale_name: str | None = None  # the model's name for `scale` where it is its own (Granite's attention_multiplier)

    @property
    def sliding(self) -> bool:
        return self.window is not None

    def of_head(self, head: int) -> LayerGeometry:
        """This layer's geometry as `head` sees it (the head's own entry kept: an ALiBi head's slope)."""
        for differs in self.heads:
            if differs.head == head:
                window = differs.window if differs.window is not None else self.window
                return replace(self, mask="sliding" if window is not None else self.mask, window=window,
                               scale=differs.scale if differs.scale is not None else self.scale,
                               soft_cap=differs.soft_cap if differs.soft_cap is not None else self.soft_cap,
                               heads=(differs,))
        return self
