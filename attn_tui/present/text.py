"""User text made safe to draw: control characters become visible symbols, never terminal escapes.

`printable` is `attn_tui.io.controls.printable` (the one list of unsafe characters, shared with the
JSON writer); here it is applied once per axis of labels.
"""

from __future__ import annotations

from attn_tui.io.controls import printable

__all__ = ["printable", "printable_labels"]


_LABELS: dict[int, tuple[tuple[str, ...], tuple[str, ...]]] = {}  # id(labels) → (labels, printable labels)


def printable_labels(labels: tuple[str, ...]) -> tuple[str, ...]:
    """`printable` over an axis's labels, once per axis.

    Every stage and head of a trace shares one token tuple; at 16k tokens redoing it, or even hashing
    it, on each keypress would cost more than the frame, so the few axes in use are kept by identity
    (the entry holds the tuple, so its id cannot be reused while it is kept).
    """
    kept = _LABELS.get(id(labels))
    if kept is not None and kept[0] is labels:
        return kept[1]
    shown = tuple(printable(t) for t in labels)
    if len(_LABELS) >= 16:
        del _LABELS[next(iter(_LABELS))]
    _LABELS[id(labels)] = (labels, shown)
    return shown
