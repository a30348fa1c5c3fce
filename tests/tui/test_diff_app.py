"""Pilot: differential attention in the app, the `diff` variant from its sample and a DiffLlama folder, stepped
stage by stage; the difference is drawn signed and the inspector explains λ and a cell of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from attn_tui.ask.samples import load_samples
from attn_tui.ask.variants import VARIANTS
from attn_tui.tui.widgets.inspector import Inspector
from tests.tui.helpers import model_app, sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

SIZE = (110, 34)


async def test_the_diff_sample_steps_through_every_stage_and_explains_lambda_and_a_negative_cell() -> None:
    app = sample_app("diff_english")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert load_samples()["diff_english"].stage == load_samples()["diff_korean"].stage == "diff_weights"
        await pilot.press("home")
        seen = [app.view.name]
        while app.view.name != "concat":
            await pilot.press("right")
            seen.append(app.view.name)
        assert seen == ["embedding", *VARIANTS["diff"].stages]
        app.explorer.go_to_stage(app.explorer.stage_names().index("lambda"))
        await settle(pilot)
        await pilot.press("shift+right", "shift+right", "shift+right")  # the last cell of λ's row: λ itself
        await pilot.pause()
        text = str(app.query_one(Inspector).render())
        assert "λ_init" in text and "λ_q1" in text
        app.explorer.go_to_stage(app.explorer.stage_names().index("diff_weights"))
        await settle(pilot)
        values = app.view.grid.values
        assert float(np.nanmin(values)) < 0  # signed: the second map cancels some keys
        lam = float(app.trace.tensor("lambda", head=0)[0, 3])
        np.testing.assert_allclose(values, app.trace.tensor("weights_1", head=0).numpy()
                                   - lam * app.trace.tensor("weights_2", head=0).numpy(), atol=1e-6)


async def test_a_diffllama_folder_opens_and_its_pairs_stages_follow_the_maps(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.sources.test_diffllama import CONFIG
    from tests.sources.tiny_models import TEXT, tiny

    app = model_app(str(tiny(tmp_path, "diffllama", CONFIG)), TEXT, layer=1, head=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = app.explorer.stage_names()
        assert names.index("weights") < names.index("lambda") < names.index("diff_weights") < names.index(
            "head_norm") < names.index("concat")
        app.explorer.go_to_stage(names.index("diff_weights"))
        await settle(pilot)
        assert app.view.name == "diff_weights"
        trace = app.trace
        lam = float(trace.tensor("lambda", 1, 0)[0, 3])
        np.testing.assert_allclose(app.view.grid.values, trace.tensor("weights", 1, 0).numpy()
                                   - lam * trace.tensor("weights", 1, 2).numpy(), atol=1e-6)
        await pilot.press("right")
        await settle(pilot)
        assert app.view.name == "diff_output"
