"""The colour legend under a heatmap: minimum, a colour ramp, maximum, and the special marks."""

from __future__ import annotations

from rich.text import Text

from attn_tui.i18n import _
from attn_tui.render.colors import (
    LEVELS,
    MASKED_STYLE,
    NAN_STYLE,
    NEG_INF_STYLE,
    POS_INF_STYLE,
    Scale,
    format_value,
    level_style,
)
from attn_tui.render.heatmap import HATCH

RAMP_WIDTH = 16


def ramp(scale: Scale, width: int = RAMP_WIDTH) -> Text:
    """`-1.2 ▕ramp▏ 1.2`: the colours of a scale between its own ends."""
    text = Text(format_value(scale.lo, 8) + " ", "bold")
    for n in range(width):
        text.append(" ", level_style(round(n / (width - 1) * (LEVELS - 1)), scale.diverging))
    text.append(" " + format_value(scale.hi, 8), "bold")
    return text



def legend(scale: Scale, lo: float, hi: float, marks: set[str], fill: str = "-inf", convention: str = "") -> Text:
    """`min -0.53 ▕ramp▏ max 1.2   ░ masked  -∞  NaN`, naming only the marks that occur.

    The ramp spans the scale (which may be wider than the data: symmetric about 0 for
    signed values, 0…1 for probabilities); min and max are the data's own.
    """
    text = Text()
    text.append(_("min") + " ", "dim")
    text.append(format_value(lo, 8), "bold")
    text.append(" ")
    for n in range(RAMP_WIDTH):
        level = round(n / (RAMP_WIDTH - 1) * (LEVELS - 1))
        text.append(" ", level_style(level, scale.diverging))
    text.append(" " + _("max") + " ", "dim")
    text.append(format_value(hi, 8), "bold")
    if "masked" in marks:
        text.append("   ")
        text.append(f"{HATCH}{HATCH}", MASKED_STYLE)
        if convention:  # a mask given another way round than the heatmap's 1 = may attend: say how, in the same line
            text.append(" " + _("masked ({fill})").format(fill=fill), "dim")
            text.append("  " + convention, "dim italic")
        else:
            text.append(" " + _("masked (fill {fill})").format(fill=fill), "dim")
    if "-inf" in marks:
        text.append("  ")
        text.append("-∞", NEG_INF_STYLE)
    if "+inf" in marks:
        text.append("  ")
        text.append("+∞", POS_INF_STYLE)
    if "nan" in marks:
        text.append("  ")
        text.append("NaN", NAN_STYLE)
    return text
