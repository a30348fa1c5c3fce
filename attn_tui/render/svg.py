"""Rich's SVG screenshot, re-set so that a browser puts every character in its terminal cells, Korean included.

`Console.export_svg` writes one `<text>` per run of one style, at the run's first cell,
with `textLength` = char_width × the run's *characters*, under the font stack "Fira
Code, monospace" and `font-variant-east-asian: full-width`. A browser then draws a
Hangul syllable (two cells in the terminal) from whatever CJK font it finds, one em
wide, while the run's length counts it as one cell: its spacing shrinks and the glyphs
overlap. Here each run is set again: each word of characters one cell wide, and each run of
spaces, keeps one `<text>` with one x per character (each starts at its cell, whatever font
drew the one before, and a renderer that reads only the first x, as librsvg, or collapses
spaces still starts every word in its cell), and every
other character (two cells, or a cluster with combining marks) gets a `<text>` of its
own, stretched or squeezed to exactly its cells (`lengthAdjust="spacingAndGlyphs"`).
The font stack names CJK monospace fonts before the generic one, and east-asian glyphs
are asked for at their normal width, as the terminal draws them.

Rich writes no `<text>` for a run of spaces alone (a padded cell, a space with a background of its own): the
page looks right but its text reads "0.397071✓ matches" for "0.397071 ✓ matches". The cells a line skips
between two runs are written back (as no-break spaces, as Rich writes every space, which SVG keeps), so a
copy or a search of the page finds what the terminal shows.
"""

from __future__ import annotations

import html
import itertools
import re

from rich.cells import cell_len

FONT_STACK = ('"Fira Code", "DejaVu Sans Mono", "Noto Sans Mono CJK KR", "Noto Sans CJK KR", "D2Coding", '
              '"NanumGothicCoding", "Source Han Mono K", monospace')
_MATRIX_FONT = re.compile(r"font-family: Fira Code, monospace;")
_SPACES = (" ", "\xa0")
_FULL_WIDTH = re.compile(r"font-variant-east-asian: full-width;")
_TEXT = re.compile(r'<text class="(?P<cls>[^"]+)" x="(?P<x>[^"]+)" y="(?P<y>[^"]+)" textLength="(?P<length>[^"]+)" '
                   r'clip-path="(?P<clip>[^"]+)">(?P<body>[^<]*)</text>')


def _number(value: float) -> str:
    return format(round(value, 4), "g")


def clusters(text: str) -> list[str]:
    """`text` cut where the terminal starts a new cell: each character with the zero-width ones after it."""
    found: list[str] = []
    for char in text:
        if found and cell_len(char) == 0:
            found[-1] += char
        else:
            found.append(char)
    return found


def _is_narrow(cluster: str) -> bool:
    """One code point in the Basic Multilingual Plane, one cell: a browser gives it exactly one x of a list."""
    return len(cluster) == 1 and ord(cluster) <= 0xFFFF and cell_len(cluster) == 1


def _tag(cls: str, x: str, y: str, clip: str, body: str, cells: float | None = None) -> str:
    stretch = "" if cells is None else f' textLength="{_number(cells)}" lengthAdjust="spacingAndGlyphs"'
    return f'<text class="{cls}" x="{x}" y="{y}"{stretch} clip-path="{clip}">{html.escape(body, quote=False)}</text>'


def _reset_text(match: re.Match[str], line_ends: dict[str, int]) -> str:
    """One of Rich's `<text>` runs as `<text>` elements whose characters each sit in their cells; `line_ends`:
    the column each line (by its clip path) has been written up to, so the cells skipped before this run are
    written as spaces."""
    text = html.unescape(match["body"])
    if not text or text.isspace():  # the line's closing newline
        return match.group(0)
    char_width = float(match["length"]) / len(text)  # Rich's textLength counts characters
    column = round(float(match["x"]) / char_width)
    cls, y, clip = match["cls"], match["y"], match["clip"]
    tags: list[str] = []
    narrow: list[tuple[int, str]] = []  # (column, character) of the run of one-cell characters being gathered
    narrow.extend((col, "\xa0") for col in range(line_ends.get(clip, column), column))

    def flush() -> None:
        # Words and the spaces between them are elements of their own: a renderer that reads only an element's
        # first x (librsvg) or collapses its spaces still starts each word in its cell.
        for _blank, group in itertools.groupby(narrow, key=lambda placed: placed[1] in _SPACES):
            placed = list(group)
            xs = " ".join(_number(col * char_width) for col, _ in placed)
            tags.append(_tag(cls, xs, y, clip, "".join(char for _, char in placed)))
        narrow.clear()

    for cluster in clusters(text):
        cells = cell_len(cluster)
        if _is_narrow(cluster):
            narrow.append((column, cluster))
        else:
            flush()
            if not cluster.isspace():
                tags.append(_tag(cls, _number(column * char_width), y, clip, cluster,
                                 cells * char_width if cells else None))
        column += cells
    flush()
    line_ends[clip] = column
    return "".join(tags)


def cell_aligned(svg: str) -> str:
    """Rich's SVG (`Console.export_svg`, Textual's `export_screenshot`) with every character in its cells."""
    svg = _MATRIX_FONT.sub(f"font-family: {FONT_STACK};", svg, count=1)
    svg = _FULL_WIDTH.sub("font-variant-east-asian: normal;", svg, count=1)
    line_ends: dict[str, int] = {}
    return _TEXT.sub(lambda match: _reset_text(match, line_ends), svg)
