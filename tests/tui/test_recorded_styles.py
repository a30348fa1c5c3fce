"""The app walked through recorded traces of styles the recorder learned later: every place shows, none fails."""

from __future__ import annotations

import torch

import attn_tui
from attn_tui.ask.settings import RecordAsk
from attn_tui.tui.widgets.inspector import Inspector
from tests.sources.recorder import more_modules as mm
from tests.tui.helpers import RecordingApp, settle

SIZE = (120, 40)


def traces() -> list:
    torch.manual_seed(0)
    loop, luong = mm.HeadLoop(8, 2, 6).eval(), mm.LuongScores("general", 4)
    with attn_tui.record() as heads:
        loop(torch.randn(1, 4, 8))
        luong(torch.randn(1, 2, 4), torch.randn(5, 2, 4))
    q, k = torch.randn(3, 4), torch.randn(5, 4)
    with attn_tui.record() as alone:  # only scores and weights: a softmax over every cell at once
        torch.softmax((q @ k.T).flatten(), 0) @ torch.randn(15, 2)
    return [heads.trace, alone.trace]


async def test_every_place_of_gathered_heads_and_a_bare_softmax_shows() -> None:
    for trace in traces():
        app = RecordingApp(record=RecordAsk().keeping(trace))
        async with app.run_test(size=SIZE) as pilot:
            await settle(pilot)
            await pilot.press("home")
            seen = set()
            for _ in range(len(app.explorer.places)):
                seen.add((app.view.place.module, app.view.name, app.view.head))
                assert "✓ matches" in str(app.query_one(Inspector).render())
                await pilot.press("]", "right")
            if trace.heads == 2:
                assert ("HeadLoop", "weights", 1) in seen and ("LuongScores", "key_proj", None) in seen
            else:
                assert {name for _, name, _ in seen} == {"scores", "weights"}
