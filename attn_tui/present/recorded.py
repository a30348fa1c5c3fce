"""What a recorded program is, as the model pane lists it: its file, each attention it ran, the line and the shapes.

While `attn-tui trace` shows the user's own code, the variant settings in the model pane
have nothing to do with what is on screen; these rows take their place. Each value is a
`Msg` (or a plain string of the user's code, never translated), so `t` rewrites the rows
in the other language without the trace.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from attn_tui.i18n import NP_, Msg, Plural
from attn_tui.present.text import printable

if TYPE_CHECKING:
    from attn_tui.trace.stage import Stage, Trace

SHAPES = ("query", "key", "value", "weights", "output")  # listed by their catalog symbols: Q K V A O
TOKENS = 12  # tokens listed before "…": the heatmap's axes show them all
LINE_OF = ("weights", "scores", "output")  # the line shown for a module: its softmax's, else the nearest


class RecordedRow(NamedTuple):
    label: str  # an English msgid in the context "recorded", translated where it is drawn
    value: str | Msg


def recorded_rows(trace: Trace) -> list[RecordedRow] | None:
    """The rows for a recorded trace (None for any other kind): file, then per module its kind and calls, the
    line of its softmax and the shapes of Q, K, V, A and O at their first step and head; then tokens."""
    meta = trace.meta.program
    if meta is None:
        return None
    script: str | Msg = printable(meta.script) if meta.script else Msg("(a notebook or a session)")
    rows = [RecordedRow(NP_("recorded", "file"), script)]
    several = len(meta.modules) > 1
    for n, module in enumerate(meta.modules):
        own = [s for s in trace.stages.values() if s.place.module == (module if several else None)]
        kind = meta.kinds[n] if n < len(meta.kinds) else ""
        calls = meta.calls[n] if n < len(meta.calls) else 0
        shown = meta.shown[n] if n < len(meta.shown) else calls
        name = printable(module)
        rows.append(RecordedRow(NP_("recorded", "code"), f"{name} ({kind})" if kind else name))
        rows.append(RecordedRow(NP_("recorded", "calls"), Plural("{n} call", "{n} calls", n=calls) if shown == calls
                                else Msg("{n} calls, the last {shown} shown", n=calls, shown=shown)))
        line = _line(own, meta.script)
        if line:
            rows.append(RecordedRow(NP_("recorded", "line"), line))
        shapes = _shapes(own)
        if shapes:
            rows.append(RecordedRow(NP_("recorded", "shapes"), shapes))
    if meta.heads > 1:
        rows.append(RecordedRow(NP_("recorded", "heads"), str(meta.heads)))
    rows.append(RecordedRow(NP_("recorded", "queries"), _tokens(trace.query_tokens)))
    if trace.key_tokens != trace.query_tokens:
        rows.append(RecordedRow(NP_("recorded", "keys"), _tokens(trace.key_tokens)))
    return rows


def _tokens(tokens: tuple[str, ...]) -> str:
    """The first few tokens and how many there are: a pane line, not the whole axis."""
    shown = " ".join(printable(t) for t in tokens[:TOKENS])
    return f"{shown} … ({len(tokens)})" if len(tokens) > TOKENS else shown


def _first(stages: list[Stage], name: str) -> Stage | None:
    return next((s for s in stages if s.place.name == name), None)


def _line(stages: list[Stage], script: str) -> str:
    """`34: weights = F.softmax(scores, dim=-1)`: the file is named once above, unless the line is in another."""
    for name in LINE_OF:
        stage = _first(stages, name)
        if stage is not None and stage.origin:
            origin = stage.origin
            return printable(origin.removeprefix(f"{script}:") if script else origin)
    return ""


def _shapes(stages: list[Stage]) -> str:
    """`Q 3×4  K 3×4  V 3×4  A 3×3  O 3×4`: one step and one head, as the heatmap draws them."""
    found = []
    for name in SHAPES:
        stage = _first(stages, name)
        if stage is not None:
            found.append(f"{stage.symbol} {'×'.join(str(n) for n in stage.shape)}")
    return "  ".join(found)
