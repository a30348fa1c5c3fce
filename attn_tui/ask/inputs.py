"""Turn what a person types into tensors: the matrix parser and the sentence tokenizer.

One parser serves the CLI, sample files and the app's editors, so a matrix that works
in one place works everywhere, and every error points at a line and column. A row may
carry a name (`나는: 0.1 0.2 0.3 0.4`) that labels its token on the heatmap's axes.
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

from attn_tui.errors import InputError, ShapeError
from attn_tui.i18n import Msg, Plural
from attn_tui.io.files import quoted

PAD_TOKEN = "<pad>"
_NUMBER = re.compile(r"[+\-\u2212]?(?:\d+\.?\d*|\.\d+)(?:[eE][+\-]?\d+)?")
_WORDISH = re.compile(r"[^\s,;\[\]#]+")
_NOT_FINITE = re.compile(r"([+\-\u2212]?)(nan|inf(?:inity)?)", re.IGNORECASE)  # what float() would take as NaN or ±inf
_FAST_CHARS = re.compile(r"[0-9eE+\-.\s,;\u2212]*")  # a plain matrix of numbers, nothing else
_BAD_COMMA = re.compile(r",[ \t]*,|(?:^|;)[ \t]*,|,[ \t]*(?:$|;)", re.MULTILINE)
_ROW_BREAK = re.compile(r"[\n;]")
_ROW_NAME = re.compile(r"([^\s:,;#\[\]]+)[ \t]*:")  # `나는:` at the start of a row
MAX_NAME = 40  # characters of a row name


class Parsed(NamedTuple):
    """A typed matrix: its rows, and each row's name where one was typed."""

    rows: list[list[float]]
    names: tuple[str | None, ...]

    def labels(self, prefix: str) -> tuple[str, ...] | None:
        """The row names as axis labels (`prefix` + index for an unnamed row); None when no row is named."""
        if not any(self.names):
            return None
        return tuple(name or f"{prefix}{i}" for i, name in enumerate(self.names))


def tokenize(text: str) -> list[str]:
    """Whitespace tokens: simple enough that the axes show exactly what was typed."""
    tokens = text.split()
    if not tokens:
        raise InputError(Msg("the sentence is empty: type at least one word"))
    return tokens


class _Scanner:
    """Character cursor that knows its line and column (both 1-based)."""

    def __init__(self, text: str, source: str | Msg | None, echo: bool) -> None:
        self.text = text
        self.pos = 0
        self.source = source
        self.echo = echo  # False for files: an error names the place, never the content
        self.names: list[str | None] = []

    def where(self, pos: int | None = None) -> tuple[int, int]:
        pos = self.pos if pos is None else pos
        line = self.text.count("\n", 0, pos) + 1
        column = pos - (self.text.rfind("\n", 0, pos) + 1) + 1
        return line, column

    def error(self, message: Msg, pos: int | None = None) -> InputError:
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
            if word is not None and (special := _NOT_FINITE.fullmatch(word.group(0))):
                raise self.error(Msg("{value} is not a finite number: every number must be finite",
                                     value=_spelled(special)), start)
            found = word.group(0) if word else self.peek()
            raise self.error(Msg("expected a number, found {found}", found=quoted(found, 20)) if self.echo
                             else Msg("expected a number"), start)
        self.pos = match.end()
        value = float(match.group(0).replace("\u2212", "-"))
        if not math.isfinite(value):
            raise self.error(Msg("{number} is too large to be a finite number", number=quoted(match.group(0), 20)),
                             start)
        return value


def _spelled(special: re.Match[str]) -> str:
    """NaN, inf or -inf as Python spells them: one of three fixed words, safe to echo even from a file."""
    if special.group(2).lower() == "nan":
        return "nan"
    return "-inf" if special.group(1) in ("-", "\u2212") else "inf"


def _describe(ch: str) -> str | Msg:
    return Msg("the end of the input") if ch == "" else (Msg("a line break") if ch == "\n" else repr(ch))


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
                raise sc.error(Msg("expected '[' to start row {row}, found {found}", row=len(rows) + 1,
                                   found=_describe(sc.peek())))
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
            raise sc.error(Msg("expected ',' or ']' after row {row}, found {found}", row=len(rows),
                               found=_describe(sc.peek())))
        sc.pos += 1
    else:
        sc.pos = open_pos
        rows = [_parse_row_brackets(sc)]
    sc.skip_blanks(newlines=True)
    if sc.pos < len(sc.text):
        raise sc.error(Msg("unexpected {found} after the closing ']'", found=_describe(sc.peek())))
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
                raise sc.error(Msg("empty row '[]': a row needs at least one number"), open_pos)
            return row
        if ch == "":
            raise sc.error(Msg("this '[' is never closed"), open_pos)
        if ch == "[":
            raise sc.error(Msg("too many '[': a matrix has at most two levels of brackets"))
        row.append(sc.number())
        sc.skip_blanks(newlines=True)
        if sc.peek() == ",":
            sc.pos += 1
            sc.skip_blanks(newlines=True)
            if sc.peek() == ",":
                raise sc.error(Msg("expected a number between the commas"))


def _parse_plain(sc: _Scanner) -> list[list[float]]:
    """Rows on lines or split by `;`, each optionally named (`나는:`), numbers split by spaces and/or commas."""
    rows: list[list[float]] = []
    row: list[float] = []
    name: str | None = None
    row_start = 0
    after_comma = False
    while True:
        sc.skip_blanks(newlines=False)
        ch = sc.peek()
        if ch in ("", "\n", ";"):
            if after_comma:
                raise sc.error(Msg("expected a number after ',', found {found}", found=_describe(ch)))
            if name is not None and not row:
                raise sc.error(Msg("row {row} is named {name} but has no numbers", row=len(rows) + 1,
                                   name=quoted(name, 20)))
            if row:
                _check_width(sc, rows, row, row_start)
                rows.append(row)
                sc.names.append(name)
                row, name = [], None
            if ch == "":
                return rows
            sc.pos += 1
            continue
        if ch == ",":
            if after_comma:
                raise sc.error(Msg("expected a number between the commas"))
            if not row:
                raise sc.error(Msg("expected a number before ','"))
            after_comma = True
            sc.pos += 1
            continue
        if ch in "[]":
            raise sc.error(Msg("unexpected {found}: use brackets around the whole matrix, e.g. [[1, 0], [0, 1]]",
                               found=repr(ch)))
        if not row and name is None:
            row_start = sc.pos
            named = _ROW_NAME.match(sc.text, sc.pos)
            if named is not None:
                if len(named.group(1)) > MAX_NAME:
                    raise sc.error(Msg("a row name is at most {n} characters", n=MAX_NAME))
                name = named.group(1)
                sc.pos = named.end()
                continue
        row.append(sc.number())
        after_comma = False


def _check_width(sc: _Scanner, rows: list[list[float]], row: list[float], start: int) -> None:
    if rows and len(row) != len(rows[0]):
        raise sc.error(Plural("row {row} has {n} number but row 1 has {first}",
                              "row {row} has {n} numbers but row 1 has {first}",
                              row=len(rows) + 1, n=len(row), first=len(rows[0])), start)


def parse_matrix(text: str, name: str | Msg | None = None, echo: bool = True) -> list[list[float]]:
    """The rows of a typed matrix (names, if any, dropped); see `parse_rows`."""
    return parse_rows(text, name, echo).rows


def parse_rows(text: str, name: str | Msg | None = None, echo: bool = True) -> Parsed:
    """Parse a typed matrix into rows of floats and their names; raise InputError naming line and column.

    Plain lists rather than tensors: parsing must not wait for torch to import, so
    the app can validate as the user types. `echo=False` (text read from a file) keeps
    what was found out of the error: a file that is not a matrix may be a secret.
    """
    fast = _parse_fast(text)
    if fast is not None:
        return Parsed(fast, (None,) * len(fast))
    sc = _Scanner(text, name, echo)
    sc.skip_blanks(newlines=True)
    what = name or Msg("the matrix")
    if sc.peek() == "":
        raise InputError(Msg("{what} is empty: type at least one row of numbers", what=what))
    bracketed = sc.peek() == "["
    rows = _parse_bracketed(sc) if bracketed else _parse_plain(sc)
    if not rows:
        raise InputError(Msg("{what} has no numbers: type at least one row", what=what))
    return Parsed(rows, (None,) * len(rows) if bracketed else tuple(sc.names))


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
        raise ShapeError(Msg("K is {k} but V is {v}: they need the same number of rows (one value per key)",
                             k=shape_text(k), v=shape_text(v)))
    if same_width and q[1] != k[1]:
        raise ShapeError(Msg("Q is {q} but K is {k}: their last dimensions must match", q=shape_text(q),
                             k=shape_text(k)))
