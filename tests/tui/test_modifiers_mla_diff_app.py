"""The app's settings pane on mla and diff: the soft cap, the QK-norm and the gate rows are live there (and greyed
out on linear), and setting them steps through their stages with the inspector's arithmetic recomputing each;
diff on a long input shows its difference map read by tiles."""

from __future__ import annotations

import pytest
from textual.widgets import Checkbox, Input, Select

from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
from attn_tui.explain.cell import explain
from tests.tui.helpers import RecordingApp, sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

SIZE = (110, 34)
ROWS = ("#set-softcap", "#set-qk_norm", "#set-gate")


@pytest.mark.parametrize(("sample", "new"), [
    ("mla_korean", ("query_full", "query_norm", "key_norm", "capped", "gate", "gated")),
    ("diff_english", ("query_1_norm", "key_2_norm", "capped_1", "capped_2", "gate", "gated")),
])
async def test_the_panes_rows_set_the_cap_the_norm_and_the_gate(sample: str, new: tuple[str, ...]) -> None:
    app = sample_app(sample)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not any(app.query_one(row).disabled for row in ROWS)
        app.query_one("#set-softcap", Input).value = "3"
        app.query_one("#set-qk_norm", Select).value = "rms"
        app.query_one("#set-gate", Checkbox).value = True
        await settle(pilot)
        settings = app.state.wanted.request.settings
        assert (settings.softcap, settings.qk_norm, settings.gate) == (3.0, "rms", True)
        assert set(new) <= set(app.trace.names())
        for name in new:
            app.explorer.go_to_stage(app.explorer.stage_names().index(name))
            await pilot.pause()
            assert app.view.name == name
            place = next(p for p in app.trace.stages if p.name == name)
            assert explain(app.trace, place, (1, 1)).matches, name


async def test_the_rows_are_greyed_out_on_linear() -> None:
    app = sample_app("linear_state_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert all(app.query_one(row).disabled for row in ROWS)


async def test_diff_on_a_long_input_opens_its_lazy_difference_and_explains_a_far_cell() -> None:
    text = " ".join(f"w{i}" for i in range(300))  # 90,000 cells a map: read by tiles
    app = RecordingApp(VariantAsk(SentenceInput(text), Settings(variant="diff", heads=2, mask="causal", softcap=4.0)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("diff_weights"))
        await pilot.pause()
        stage = app.trace.stages[app.view.place]
        assert stage.lazy and tuple(stage.shape) == (300, 300)
        assert explain(app.trace, app.view.place, (280, 140)).matches
        await pilot.press(*["down"] * 30, "right")  # the heatmap reads the tiles it shows
        await pilot.pause()
        assert app.cursor[0] >= 30
