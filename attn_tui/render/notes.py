"""Short notes drawn under the sentence: a model's own tokens, or what a decoder wrote."""

from __future__ import annotations

from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.model_view import ModelNote
from attn_tui.present.text import printable

MAX_TOKENS_SHOWN = 200


def model_note(seen: ModelNote) -> Text:
    """A decoder's output (and its teacher-forcing target), or a model's tokens with special ones dimmed."""
    note = Text(f"{printable(seen.title)} ", style="dim")
    if seen.decoder:
        note.append("→ ")
        for ch, missed in seen.output:
            note.append(printable(ch), "bold red" if missed else "bold green")
        if seen.target is not None:
            note.append("   " + _("target {target}").format(target=printable(seen.target)), "dim")
        if seen.teacher_forcing:
            forced = _("(teacher forcing on {target})").format(target=printable(str(seen.target)))
            note.append("   " + forced, "magenta")
        return note
    note.append(_("tokens:") + " ")
    for token, special in seen.tokens:
        shown = printable(token)
        note.append(shown if special else f" {shown} ", "dim italic" if special else "reverse")
        note.append(" ")
    note.append(f"  ({seen.count})", "dim")
    if seen.offload:
        note.append(f"  {printable(seen.offload)}", "yellow")
    return note
