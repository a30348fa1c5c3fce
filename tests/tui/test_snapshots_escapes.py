"""The screen with escape sequences and bidi overrides typed in the sentence: drawn as symbols, reviewed by eye."""

from __future__ import annotations

import pytest
from textual import events
from textual.widgets import Input

from tests.tui.helpers import sample_app, settle

pytestmark = pytest.mark.slow

HOSTILE = "ok \x1b]52;c;aGk=\x07 \x1b]2;pwned\x07 \u202eevil \x9b31m 학교"


def test_a_sentence_holding_escapes_is_drawn_with_symbols(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        sentence = pilot.app.query_one("#sentence", Input)
        sentence.focus()
        await pilot.pause()
        sentence.post_message(events.Paste(HOSTILE))
        await pilot.pause()
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("weights"))
        pilot.app.explorer.heatmap.focus()  # no blinking cursor in the picture
        await pilot.pause()
        await settle(pilot)

    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=run_before)
