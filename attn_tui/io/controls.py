"""The one list of characters that must never reach a terminal raw; two ways out: a visible picture, a JSON escape.

A token, a row name, a file or model name may hold ESC or BEL (typed, pasted, or decoded from a
model's byte-level vocabulary); printed raw, `ESC ] 52 ;…` writes the user's clipboard and
`ESC ] 2 ;…` retitles the terminal. Turning ESC itself into a visible picture breaks every escape
sequence (CSI, OSC, DCS…): what follows it is then plain text. C1 controls (U+0080–U+009F) start
sequences on their own in some terminals, so they go too. The bidirectional marks, embeddings,
overrides and isolates (U+200E/F, U+061C, U+202A–U+202E, U+2066–U+2069) reorder the rest of a line
in a terminal that does right-to-left text (a token's override would reverse the numbers beside
it); the line and paragraph separators (U+2028/9) break a line where no newline is seen.
Written files keep the data exact: JSON spells each such character as a `\\u` escape, which a reader
turns back into the same character.
"""

from __future__ import annotations

import re

UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return chr(0x2400 + code) if code < 0x20 else ("␡" if code == 0x7F else "�")


def printable(text: str) -> str:
    """`text` with every unsafe character replaced by a visible one-cell symbol (ESC → ␛, BEL → ␇, others �)."""
    return UNSAFE.sub(_picture, text) if UNSAFE.search(text) else text


_UNSAFE_IN_LINES = re.compile(UNSAFE.pattern.replace("\x00-\x1f", "\x00-\x08\x0b\x0c\x0e-\x1f"))


def printable_lines(text: str) -> str:
    """Like `printable`, for a program's output passed on: its tabs and line ends (\\n, \\r) still act."""
    return _UNSAFE_IN_LINES.sub(_picture, text)


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group(0)):04x}"


def json_safe(document: str) -> str:
    """A JSON text (from `json.dumps(..., ensure_ascii=False)`) with every unsafe character as a `\\u` escape.

    json.dumps already escapes U+0000–U+001F; DEL, the C1 controls and the bidi marks it leaves raw
    even though they would act on a terminal. Outside strings a JSON text is ASCII punctuation and
    numbers, so every match is inside a string and its escape reads back as the same character.
    """
    return UNSAFE.sub(_escape, document) if UNSAFE.search(document) else document
