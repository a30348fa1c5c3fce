"""Turn what a person types into tensors: the matrix parser and the sentence tokenizer.

One parser serves the CLI, sample files and the app's editors, so a matrix that works
in one place works everywhere, and every error points at a line and column.
"""

from __future__ import annotations

import math
import re

from attn_tui.core.errors import InputError, ShapeError
from attn_tui.core.files import quoted

PAD_TOKEN = "<pad>"
_NUMBER = re.compile(r"[+\-\u2212]?(?:\d+\.?\d*|\.\d+)(?:[eE][+\-]?\d+)?")
_WORDISH = re.compile(r"[^\s,;\[\]#]+")
_FAST_CHARS = re.compile(r"[0-9eE+\-.\s,;\u2212]*")  # a plain matrix of numbers, nothing else
_BAD_COMMA = re.compile(r",[ \t]*,|(?:^|;)[ \t]*,|,[ \t]*(?:$|;)", re.MULTILINE)
_ROW_BREAK = re.compile(r"[\n;]")


def tokenize(text: str) -> list[str]:
    """Whitespace tokens: simple enough that the axes show exactly what was typed."""
    tokens = text.split()
    if not tokens:
        raise InputError("the sentence is empty: type at least one word")
    return tokens


class _Scanner:
    """Character cursor that knows its line and column (both 1-based)."""

    def __init__(self, text: str, source: str | None, echo: bool) -> None:
        self.text = text
        self.pos = 0
        self.source = source
        self.echo = echo  # False for files: an error names the place, never the content

    def where(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, column

    def error(self, message: str, pos: int | None = None) -> InputError:
        line, column = self.where(pos)
        return InputError(message, line, column, self.source)

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def skip_blanks(self, newlines: bool) -> None:
        """Skip spaces and comments (`#` to end of line); newlines too when asked."""
        while self.pos < len(self.text):
            ch = self.text[self.pos]
            if ch == "#":
                end = self.text.find("\n", self.pos)
                self.pos = len(self.text) if end < 0 else end
            elif ch == "\n" and not newlines:
                return
            elif ch.isspace():
                self.pos += 1
            else:
                return

    def number(self) -> float:
        start = self.pos
        match = _NUMBER.match(self.text, self.pos)
        word = _WORDISH.match(self.text, self.pos)
        if match is None or (word is not None and word.end() > match.end()):
            found = word.group(0) if word else self.peek()
            raise self.error(f"expected a number, found {quoted(found, 20)}" if self.echo else "expected a number",
                             start)
        self.pos = match.end()
        value = float(match.group(0).replace("\u2212", "-"))
        if not math.isfinite(value):
            raise self.error(f"{quoted(match.group(0), 20)} is too large to be a finite number", start)
        return value


def _describe(ch: str) -> str:
    return "the end of the input" if ch == "" else ("a line break" if ch == "\n" else repr(ch))


def _parse_bracketed(sc: _Scanner) -> list[list[float]]:
    """`[[1, 0], [0, 1]]`, numpy's `[[1. 0.]\\n [0. 1.]]`, or one row `[1, 2]`."""
    open_pos = sc.pos
    sc.pos += 1
    sc.skip_blanks(newlines=True)
    if sc.peek() == "[":
        rows: list[list[float]] = []
        while True:
            sc.skip_blanks(newlines=True)
            if sc.peek() != "[":
                raise sc.error(f"expected '[' to start row {len(rows) + 1}, found {_describe(sc.peek())}")
            start = sc.pos
            row = _parse_row_brackets(sc)
            _check_width(sc, rows, row, start)
            rows.append(row)
            sc.skip_blanks(newlines=True)
            if sc.peek() == ",":
                sc.pos += 1
                sc.skip_blanks(newlines=True)
                if sc.peek() == "]":
                    break
                continue
            if sc.peek() == "]":
                break
            if sc.peek() == "[":
                continue
            raise sc.error(f"expected ',' or ']' after row {len(rows)}, found {_describe(sc.peek())}")
        sc.pos += 1
    else:
        sc.pos = open_pos
        rows = [_parse_row_brackets(sc)]
    sc.skip_blanks(newlines=True)
    if sc.pos < len(sc.text):
        raise sc.error(f"unexpected {_describe(sc.peek())} after the closing ']'")
    return rows


def _parse_row_brackets(sc: _Scanner) -> list[float]:
    """One `[a, b, c]` row; commas optional, line breaks allowed."""
    open_pos = sc.pos
    sc.pos += 1
    row: list[float] = []
    while True:
        sc.skip_blanks(newlines=True)
        ch = sc.peek()
        if ch == "]":
            sc.pos += 1
            if not row:
                raise sc.error("empty row '[]': a row needs at least one number", open_pos)
            return row
        if ch == "":
            raise sc.error("this '[' is never closed", open_pos)
        if ch == "[":
            raise sc.error("too many '[': a matrix has at most two levels of brackets")
        row.append(sc.number())
        sc.skip_blanks(newlines=True)
        if sc.peek() == ",":
            sc.pos += 1
            sc.skip_blanks(newlines=True)
            if sc.peek() == ",":
                raise sc.error("expected a number between the commas")


def _parse_plain(sc: _Scanner) -> list[list[float]]:
    """Rows on lines or split by `;`, numbers split by spaces and/or commas."""
    rows: list[list[float]] = []
    row: list[float] = []
    row_start = 0
    after_comma = False
    while True:
        sc.skip_blanks(newlines=False)
        ch = sc.peek()
        if ch in ("", "\n", ";"):
            if after_comma:
                raise sc.error(f"expected a number after ',', found {_describe(ch)}")
            if row:
                _check_width(sc, rows, row, row_start)
                rows.append(row)
                row = []
            if ch == "":
                return rows
            sc.pos += 1
            continue
        if ch == ",":
            if after_comma:
                raise sc.error("expected a number between the commas")
            if not row:
                raise sc.error("expected a number before ','")
            after_comma = True
            sc.pos += 1
            continue
        if ch in "[]":
            raise sc.error(f"unexpected {ch!r}: use brackets around the whole matrix, e.g. [[1, 0], [0, 1]]")
        if not row:
            row_start = sc.pos
        row.append(sc.number())
        after_comma = False


def _check_width(sc: _Scanner, rows: list[list[float]], row: list[float], start: int) -> None:
    if rows and len(row) != len(rows[0]):
        raise sc.error(
            f"row {len(rows) + 1} has {len(row)} number{'s' * (len(row) != 1)} "
            f"but row 1 has {len(rows[0])}", start)


def parse_matrix(text: str, name: str | None = None, echo: bool = True) -> list[list[float]]:
    """Parse a typed matrix into rows of floats; raise InputError naming line and column.

    Plain lists rather than tensors: parsing must not wait for torch to import, so
    the app can validate as the user types. `echo=False` (text read from a file) keeps
    what was found out of the error: a file that is not a matrix may be a secret.
    """
    fast = _parse_fast(text)
    if fast is not None:
        return fast
    sc = _Scanner(text, name, echo)
    sc.skip_blanks(newlines=True)
    if sc.peek() == "":
        raise InputError(f"{name or 'the matrix'} is empty: type at least one row of numbers")
    rows = _parse_bracketed(sc) if sc.peek() == "[" else _parse_plain(sc)
    if not rows:
        raise InputError(f"{name or 'the matrix'} has no numbers: type at least one row")
    return rows


def _parse_fast(text: str) -> list[list[float]] | None:
    """Plain rows of plain numbers at C speed; None whenever anything is unusual (the scanner then reports it).

    A 16 MB file of numbers takes seconds through the scanner; most files are this simple.
    """
    if not _FAST_CHARS.fullmatch(text) or _BAD_COMMA.search(text):
        return None
    rows: list[list[float]] = []
    try:
        for line in _ROW_BREAK.split(text.replace("\u2212", "-")):
            tokens = line.replace(",", " ").split()
            if tokens:
                rows.append([float(t) for t in tokens])
    except ValueError:
        return None
    if not rows or any(len(row) != len(rows[0]) for row in rows):
        return None
    if not all(map(math.isfinite, (x for row in rows for x in row))):
        return None
    return rows


def shape_text(shape: tuple[int, ...] | list[int]) -> str:
    return "×".join(str(n) for n in shape)


def check_qkv_shapes(q: tuple[int, int], k: tuple[int, int], v: tuple[int, int],
                     same_width: bool) -> None:
    """Raise ShapeError naming both shapes when Q, K, V cannot be used together.

    `same_width` is True for variants that take q·k directly (dot, scaled_dot); the
    others learn a projection and accept different query and key widths.
    """
    if k[0] != v[0]:
        raise ShapeError(f"K is {shape_text(k)} but V is {shape_text(v)}: "
                         "they need the same number of rows (one value per key)")
    if same_width and q[1] != k[1]:
        raise ShapeError(f"Q is {shape_text(q)} but K is {shape_text(k)}: "
                         "their last dimensions must match")
