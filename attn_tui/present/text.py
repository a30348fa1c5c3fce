"""User text made safe to draw: control characters become visible symbols, never terminal escapes.

A token may hold ESC or BEL (typed, or decoded from a model's byte-level vocabulary);
printed raw it would recolour or retitle the user's terminal. C0 controls become their
Unicode control pictures (ESC → ␛), DEL and C1 controls a replacement mark. The bidirectional
embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069) become a mark too: in a terminal
that reorders right-to-left text, one of them in a token would reverse the rest of the line, the
numbers beside it included.
"""

from __future__ import annotations

import re

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return chr(0x2400 + code) if code < 0x20 else ("␡" if code == 0x7F else "�")


def printable(text: str) -> str:
    """`text` with every control character replaced by a visible one-cell symbol."""
    return _CONTROL.sub(_picture, text) if _CONTROL.search(text) else text


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
