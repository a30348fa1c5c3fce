"""render/svg.py: Rich's SVG re-set so each character sits in its cells, checked against cell positions Rich's
console itself lays out (a Korean word two cells a syllable, a combining mark in its base's cell)."""

from __future__ import annotations

import html
import io
import re

from rich.cells import cell_len
from rich.console import Console
from rich.text import Text

from attn_tui.render.svg import FONT_STACK, cell_aligned, clusters

TEXT = re.compile(r'<text class="[^"]+" x="(?P<x>[^"]+)" y="[^"]+"(?: textLength="(?P<length>[^"]+)" '
                  r'lengthAdjust="spacingAndGlyphs")? clip-path="[^"]+">(?P<body>[^<]*)</text>')


def _svg(line: Text, width: int = 40) -> str:
    console = Console(width=width, record=True, file=io.StringIO(), force_terminal=True, color_system="truecolor",
                      legacy_windows=False)
    console.print(line)
    return console.export_svg(title="t")


def _placed(svg: str, char_width: float) -> list[tuple[float, str, float | None]]:
    """(x, cluster, textLength) of every character drawn, in order."""
    placed = []
    for match in TEXT.finditer(svg):
        xs = [float(x) for x in match["x"].split()]
        body = html.unescape(match["body"])
        if len(xs) > 1 or (match["length"] is None and len(body) > 1):
            assert len(xs) == len(body)  # one x per character of a one-cell run
            placed += [(x, char, None) for x, char in zip(xs, body)]
        else:
            placed.append((xs[0], body, None if match["length"] is None else float(match["length"])))
    return placed


def test_each_syllable_gets_two_cells_and_each_letter_one() -> None:
    line = Text("어텐션 attention 나는 학교에 간다 é")
    line.stylize("bold", 0, 6)  # runs of two styles: the cut between them must not shift anything
    raw = _svg(line)
    fixed = cell_aligned(raw)
    char_width = float(re.search(r"font-size: ([\d.]+)px", fixed)[1]) * 0.61  # type: ignore[index]
    column, expected = 0, []
    for cluster in clusters(line.plain):
        if cluster.strip():
            expected.append((column, cluster, cell_len(cluster)))
        column += cell_len(cluster)
    placed = [p for p in _placed(fixed, char_width) if p[1].strip()]
    assert [c for _, c, _ in placed] == [c for _, c, _ in expected]
    for (x, cluster, length), (col, _, cells) in zip(placed, expected):
        assert abs(x - col * char_width) < 1e-3, cluster
        if cells == 2:
            assert length is not None and abs(length - 2 * char_width) < 1e-3, cluster
    assert FONT_STACK in fixed and "Noto Sans Mono CJK KR" in fixed and "full-width" not in fixed


def test_a_combining_mark_stays_with_its_base() -> None:
    assert clusters("e\u0301a나") == ["e\u0301", "a", "나"]
    fixed = cell_aligned(_svg(Text("xe\u0301y")))
    assert "e\u0301</text>" in fixed  # one element: the browser draws the mark over its base


def test_markup_in_the_text_stays_text() -> None:
    fixed = cell_aligned(_svg(Text("<b>&amp; 한</b>")))
    assert "<b>" not in fixed and "&lt;b&gt;" in fixed and "&amp;amp;" in fixed


def test_the_page_text_keeps_every_space_rich_leaves_out() -> None:
    """A space with a style of its own (a background) gets no `<text>` from Rich: its cell is written back, so the
    page's text reads as the terminal does, and every character still sits in its cell."""
    line = Text("0.397071")
    line.append(" ", "on red")
    line.append("✓ matches", "green")
    line.append("  ", "on blue")
    line.append("간다")
    fixed = cell_aligned(_svg(line))
    char_width = float(re.search(r"font-size: ([\d.]+)px", fixed)[1]) * 0.61  # type: ignore[index]
    placed = [p for p in _placed(fixed, char_width) if p[1] != "\n"]
    assert "".join(c for _, c, _ in placed).replace("\xa0", " ") == line.plain
    bodies = [html.unescape(match["body"]) for match in TEXT.finditer(fixed)]
    assert all(body.isspace() or body == body.strip() for body in bodies)  # a word starts its own element
    column = 0
    for x, cluster, _ in placed:
        assert abs(x - column * char_width) < 1e-3, cluster
        column += cell_len(cluster)
