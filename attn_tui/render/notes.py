"""Short notes drawn under the sentence: a model's own tokens, or what a decoder wrote."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.text import printable

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace

MAX_TOKENS_SHOWN = 200


def model_note(trace: Trace) -> Text:
    """A decoder's output (and its teacher-forcing target), or a model's tokens with special ones dimmed."""
    note = Text(f"{printable(trace.meta.short_title)} ", style="dim")
    meta = trace.meta.decoding
    if meta is not None:
        note.append("→ ")
        for step, ch in enumerate(meta.output):
            note.append(printable(ch), "bold red" if meta.missed(step, ch) else "bold green")
        if meta.target is not None:
            note.append("   " + _("target {target}").format(target=printable(meta.target)), "dim")
        if meta.teacher_forcing:
            forced = _("(teacher forcing on {target})").format(target=printable(str(meta.target)))
            note.append("   " + forced, "magenta")
        return note
    special = set(trace.meta.special_tokens)
    note.append(_("tokens:") + " ")
    for n, token in enumerate(trace.query_tokens[:MAX_TOKENS_SHOWN]):
        shown = printable(token)
        note.append(shown if n in special else f" {shown} ", "dim italic" if n in special else "reverse")
        note.append(" ")
    note.append(f"  ({len(trace.query_tokens)})", "dim")
    return note
