"""Colour scales for heatmaps, quantised so a handful of cached Styles serve any matrix size.

Probabilities (weights) use a sequential scale from dark to bright; signed values use a
diverging scale with white-ish at zero, so the sign is read before the size.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from rich.color import Color
from rich.style import Style

LEVELS = 48  # colour steps; enough to read, few enough to cache every Style

# Anchor colours (RGB) interpolated linearly.
_SEQUENTIAL = ((13, 8, 60), (60, 40, 140), (33, 120, 160), (60, 185, 110), (250, 230, 50))
_DIVERGING = ((40, 70, 170), (110, 160, 220), (235, 235, 235), (230, 130, 90), (170, 30, 40))

MASKED_STYLE = Style(color="grey50", bgcolor="grey15")
NEG_INF_STYLE = Style(color="grey62", bgcolor="grey7", bold=True)
NAN_STYLE = Style(color="black", bgcolor="magenta", bold=True)
POS_INF_STYLE = Style(color="black", bgcolor="bright_red", bold=True)


def _interpolate(anchors: tuple[tuple[int, int, int], ...], t: float) -> tuple[int, int, int]:
    t = min(1.0, max(0.0, t))
    pos = t * (len(anchors) - 1)
    i = min(int(pos), len(anchors) - 2)
    f = pos - i
    a, b = anchors[i], anchors[i + 1]
    return tuple(round(a[c] + (b[c] - a[c]) * f) for c in range(3))  # type: ignore[return-value]


@lru_cache(maxsize=4 * LEVELS)
def level_style(level: int, diverging: bool) -> Style:
    """Cached Style for one quantised level: background from the scale, readable text on it."""
    r, g, b = _interpolate(_DIVERGING if diverging else _SEQUENTIAL, level / (LEVELS - 1))
    luminance = 0.299 * r + 0.587 * g + 0.114 * b
    fg = Color.from_rgb(0, 0, 0) if luminance > 140 else Color.from_rgb(245, 245, 245)
    return Style(color=fg, bgcolor=Color.from_rgb(r, g, b))


@dataclass(frozen=True)
class Scale:
    """Maps finite values in [lo, hi] to levels; diverging scales are symmetric about 0."""

    lo: float
    hi: float
    diverging: bool

    @classmethod
    def fit(cls, finite_min: float, finite_max: float, probability: bool = False, kind: str = "diverging") -> Scale:
        """Choose the scale for a stage of the catalog's scale `kind`: [0, 1] for probabilities, symmetric about 0
        for signed ("diverging") data that has a negative value, its own min…max otherwise."""
        if probability or kind == "probability":
            return cls(0.0, max(1e-12, finite_max) if finite_max < 1 else 1.0, False)
        if kind == "diverging" and finite_min < 0:
            bound = max(abs(finite_min), abs(finite_max)) or 1.0
            return cls(-bound, bound, True)
        return cls(finite_min, finite_max if finite_max > finite_min else finite_min + 1.0, False)

    def level(self, value: float) -> int:
        return round((value - self.lo) / (self.hi - self.lo) * (LEVELS - 1))

    def style(self, value: float) -> Style:
        """Style of one cell; non-finite values get their own unmistakable styles."""
        if math.isnan(value):
            return NAN_STYLE
        if math.isinf(value):
            return NEG_INF_STYLE if value < 0 else POS_INF_STYLE
        return level_style(max(0, min(LEVELS - 1, self.level(value))), self.diverging)


def format_value(value: float, width: int) -> str:
    """Shortest readable text for a cell of `width` cells: −∞, NaN, 0.25, 1.2e+03 …"""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "-∞" if value < 0 else "+∞"
    if value == 0:
        return "0"
    for digits in (3, 2, 1, 0):
        text = f"{value:.{digits}f}"
        fits = len(text) <= width and (abs(value) >= 10 ** -digits / 2 or digits == 0)
        if fits and float(text) != 0:
            return text
    text = f"{value:.0e}".replace("e-0", "e-").replace("e+0", "e")
    return text if len(text) <= width else ("+" if value > 0 else "-") + "…"
