"""Which layers of a model are local (a sliding window) and which global, in words for the layer × head grid.

Read from each layer's recorded geometry, so Mistral (every layer slides), Qwen3 (some do) and Gemma 2/3 (local
and global layers alternate) each say what they computed; a model with no sliding layer says nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.i18n import _, pgettext

if TYPE_CHECKING:
    from collections.abc import Sequence

    from attn_tui.trace.stage import Trace

SEPARATOR = " · "


def windows_of(trace: Trace) -> tuple[int | None, ...]:
    """Each layer's sliding window (None: global), from the geometry its trace recorded (no layer is computed
    here: a layer not yet traced counts as global)."""
    found = []
    for layer in range(trace.layers):
        geometry = trace.geometry.get(layer)
        found.append(None if geometry is None else geometry.window)
    return tuple(found)


def layer_ranges(layers: Sequence[int]) -> str:
    """`0–4, 6–10, 17`: consecutive layers as one span, so 18 layers fit on a line."""
    spans: list[list[int]] = []
    for layer in sorted(layers):
        if spans and layer == spans[-1][1] + 1:
            spans[-1][1] = layer
        else:
            spans.append([layer, layer])
    return ", ".join(str(a) if a == b else f"{a}–{b}" for a, b in spans)


def window_note(windows: Sequence[int | None]) -> str:
    """`local layers 0, 2 (sliding window 3) · global layers 1, 3`; "" when no layer slides."""
    if all(window is None for window in windows):
        return ""
    parts = []
    for window in sorted({w for w in windows if w is not None}):
        parts.append(_("local layers {layers} (sliding window {window})").format(
            layers=layer_ranges([n for n, w in enumerate(windows) if w == window]), window=window))
    global_layers = [n for n, w in enumerate(windows) if w is None]
    parts.append(_("global layers {layers}").format(layers=layer_ranges(global_layers)) if global_layers
                 else _("no global layer"))
    return SEPARATOR.join(parts)


def window_labels(windows: Sequence[int | None]) -> tuple[str, ...]:
    """Under each layer's `L3` in the grid: its window (`w3`) where it slides, "" where it is global."""
    return tuple("" if window is None else pgettext("grid: a layer's sliding window", "w{window}").format(
        window=window) for window in windows)
