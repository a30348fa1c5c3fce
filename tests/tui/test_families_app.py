"""Pilot: a Gemma 2 folder in the app; its soft cap is a stage like any other, and `{` `}` move between layers
whose masks differ (a sliding window on layer 0, every earlier key on layer 1)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from tests.sources.test_families import TEXT, _tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]


async def test_the_soft_cap_is_a_stage_and_each_layer_shows_its_own_window(tmp_path: Path) -> None:
    app = model_app(str(_tiny(tmp_path, "gemma2")), TEXT, layer=0, head=1)
    async with app.run_test(size=(100, 32)) as pilot:
        await settle(pilot)
        names = app.explorer.stage_names()
        assert names.index("scaled") < names.index("capped") < names.index("masked")
        app.explorer.go_to_stage(names.index("capped"))
        await settle(pilot)
        scaled = app.trace.tensor("scaled", 0, 1).numpy()
        np.testing.assert_allclose(app.view.grid.values, 2.0 * np.tanh(scaled / 2.0), atol=1e-6)
        app.explorer.go_to_stage(names.index("masked"))
        await settle(pilot)
        last = len(app.trace.query_tokens) - 1
        assert math.isinf(app.view.grid.values[last, 0])  # outside layer 0's window of 3
        await pilot.press("right_curly_bracket")
        await settle(pilot)
        assert "1 of 4" in str(app.query_one("#layer-view").render())
        assert math.isfinite(app.view.grid.values[last, 0])  # layer 1 is global: every earlier key
