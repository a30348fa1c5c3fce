"""The app on the 2025 options: stepping through capped, the q/k norms and the gate; the pane's rows; compare with
the gate off beside the gate on."""

from __future__ import annotations

import torch
from textual.widgets import Checkbox, Input, Select

from attn_tui.explain.cell import explain
from attn_tui.tui.widgets.compare_view import CompareView
from tests.tui.helpers import sample_app, settle
from tests.tui.test_compare import _compare

SIZE = (110, 34)


async def test_stepping_walks_norms_cap_and_gate_in_the_formulas_order() -> None:
    app = sample_app("qk_norm_korean", softcap=2.0, gate=True)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        seen = [app.view.name]
        while app.view.name != "gated":
            await pilot.press("right")
            seen.append(app.view.name)
        assert seen == ["embedding", "query", "key", "value", "query_norm", "key_norm", "query_rot", "key_rot",
                        "scores", "scaled", "capped", "masked", "weights", "output", "gate", "gated"]
        for name in ("query_norm", "capped", "gate", "gated"):  # the inspector's arithmetic of each recomputes it
            place = next(p for p in app.trace.stages if p.name == name)
            assert explain(app.trace, place, (2, 1)).matches, name


async def test_the_panes_rows_set_the_cap_the_norm_and_the_gate() -> None:
    app = sample_app("english_causal")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-softcap", Input).value = "3"
        app.query_one("#set-qk_norm", Select).value = "rms-all"
        app.query_one("#set-gate", Checkbox).value = True
        await settle(pilot)
        settings = app.state.wanted.request.settings
        assert (settings.softcap, settings.qk_norm, settings.gate) == (3.0, "rms-all", True)
        assert {"capped", "query_norm", "key_norm", "gate", "gated"} <= set(app.trace.names())
        app.query_one("#set-softcap", Input).value = ""  # empty: no cap
        await settle(pilot)
        assert app.state.wanted.request.settings.softcap is None and "capped" not in app.trace.names()


async def test_compare_gate_off_shows_what_the_gate_held_back_from_the_sink() -> None:
    app = sample_app("gate_sink_english")
    async with app.run_test(size=(130, 40)) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("gated"))
        await pilot.pause()
        await _compare(pilot, "gate")
        view = app.query_one(CompareView)
        a, b = view.heatmap("a").grid, view.heatmap("b").grid
        assert a is not None and b is not None
        gated, plain = a.block(0, a.rows, 0, 1)[:, 0], b.block(0, b.rows, 0, 1)[:, 0]
        weights = app.trace.tensor("weights")[:, 0]  # how hard each query is pulled to <s>
        assert bool((weights[1:] > 0.6).all())
        assert torch.allclose(torch.tensor(plain), app.trace.tensor("output")[:, 0].double(), atol=1e-4)
        assert bool((torch.tensor(gated[1:]) < 0.3 * torch.tensor(plain[1:])).all())  # the gate closes on the sink
