"""A layer's geometry as one line the user reads beside the stage: `layer 3: sliding window 4 · rotary θ=10000 ·
scale 1/√64 · cap 50`.

Read from the trace's own record (`trace.geometry_of`), never from the kind of run, so a
Gemma-style model that alternates sliding and global layers says which one is on show, and
a variant says what its one layer is. Each part is translated as it is drawn.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg, _

if TYPE_CHECKING:
    from attn_tui.trace.geometry import LayerGeometry, Positional
    from attn_tui.trace.stage import Trace

SEPARATOR = " · "


def scale_text(scale: float) -> str:
    """`1/√64` where the scale is one over a whole number's square root (as 1/√d_k is), else the number."""
    if scale > 0:
        root = 1 / scale**2
        if round(root) > 1 and math.isclose(root, round(root), rel_tol=1e-6):
            return f"1/√{round(root)}"
    return f"{scale:.4g}"


def _mask(geometry: LayerGeometry) -> Msg | None:
    if geometry.window is not None:
        return Msg("sliding window {window}", window=geometry.window)
    return {"causal": Msg("causal"), "custom": Msg("custom mask")}.get(geometry.mask, Msg("every key"))


def _positions(positional: Positional, geometry: LayerGeometry) -> Msg:
    if positional.kind == "rotary":
        turned = Msg("rotary θ={base}", base=f"{positional.base:g}")
        if positional.fraction < 1:
            return Msg("{rotary} on {share}% of each head", rotary=turned, share=f"{100 * positional.fraction:g}")
        return turned
    if positional.kind == "alibi":
        slopes = [head.slope for head in geometry.heads if head.slope is not None]
        if not slopes:
            return Msg("ALiBi")
        return Msg("ALiBi slopes {first}…{last}", first=f"{slopes[0]:.3g}", last=f"{slopes[-1]:.3g}")
    if positional.kind == "absolute":
        return Msg("positions added to the input")
    return Msg("no positions")


def geometry_parts(geometry: LayerGeometry) -> list[str]:
    """The line's parts, in the language on show: mask, positions, scale, then what only some layers have."""
    scale = (_("scale {scale}").format(scale=scale_text(geometry.scale)) if geometry.scale_name is None else
             _("scale {scale} ({name})").format(scale=scale_text(geometry.scale), name=geometry.scale_name))
    parts = [str(_mask(geometry)), str(_positions(geometry.positional, geometry)), scale]
    if geometry.temperature != 1:
        parts.append(_("temperature {t}").format(t=f"{geometry.temperature:g}"))
    if geometry.soft_cap is not None:
        parts.append(_("cap {cap}").format(cap=f"{geometry.soft_cap:g}"))
    if geometry.sink:
        parts.append(_("a sink logit per head"))
    return parts


def geometry_line(trace: Trace, layer: int) -> str:
    """`layer 3: …` for the layer on show; "" when the trace recorded no geometry for it."""
    geometry = trace.geometry_of(layer)
    if geometry is None:
        return ""
    return _("layer {layer}: {parts}").format(layer=layer, parts=SEPARATOR.join(geometry_parts(geometry)))
