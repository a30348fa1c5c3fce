"""The stage picker (`/`): every place of the trace on show in one fuzzy list, however long the stage bar is.

The digit keys reach the first ten stages the bar lists; a decode, a flash run's tiles or a
recorded program with several modules has far more places than that. The picker and the
command palette list the same places, built here from the explorer's positions, so both
reach every one of them.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

from textual.command import SimpleCommand

from attn_tui.i18n import _
from attn_tui.present.positions import bar_window, place_title
from attn_tui.present.step_words import step_label
from attn_tui.tui.widgets.explorer import DIGITS

if TYPE_CHECKING:
    from attn_tui.tui.widgets.explorer import Explorer


def stage_commands(explorer: Explorer) -> list[SimpleCommand]:
    """One command per place of the trace on show, in stepping order; its help names the key that reaches it
    from here, if a digit does."""
    trace = explorer.trace
    if trace is None:
        return []
    window = bar_window(explorer.places, explorer.stage_index)
    digit = {place: str((n + 1) % 10) for n, place in enumerate(window[:DIGITS])}
    commands = []
    for n, place in enumerate(explorer.places):
        key = digit.get(n)
        help_text = _("here") if n == explorer.stage_index else None if key is None else _("press {key}").format(
            key=key)
        label = None if place.step is None else step_label(trace, place.step, place.module)
        if label is not None:  # what the step is: its tile's keys, what the decoder wrote, which call and item
            help_text = label if help_text is None else f"{label} · {help_text}"
        commands.append(SimpleCommand(place_title(trace, place), partial(explorer.go_to_place, n), help_text))
    return commands
