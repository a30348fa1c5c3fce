"""Pilot: Phi-3, GPT-NeoX and OLMo-2 folders in the app. The stage bar's caption says the share of each head that
is turned, the base and the window; OLMo-2's q norm is a stage whose cell the inspector explains over the whole
projection's row; `}` moves to the next layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("transformers")

from attn_tui.tui.widgets.inspector import Inspector
from tests.sources.test_families_fused import CONFIGS
from tests.sources.tiny_models import TEXT, tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]
SIZE = (110, 34)


@pytest.mark.parametrize(("model_type", "caption"), [
    ("phi3", "sliding window 3 · rotary θ=500 on 50% of each head"),
    ("gpt_neox", "causal · rotary θ=500 on 50% of each head"),
])
async def test_the_caption_says_the_share_turned_and_the_weights_are_the_models(tmp_path: Path, model_type: str,
                                                                                caption: str) -> None:
    app = model_app(str(tiny(tmp_path, model_type, CONFIGS[model_type])), TEXT, layer=0, head=1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await settle(pilot)
        assert caption in str(app.query_one("#stage-bar").render())
        np.testing.assert_allclose(app.view.grid.values, app.trace.tensor("weights", 0, 1).numpy(), atol=1e-6)
        await pilot.press("right_curly_bracket")
        await settle(pilot)
        assert "layer 1:" in str(app.query_one("#stage-bar").render())
        np.testing.assert_allclose(app.view.grid.values, app.trace.tensor("weights", 1, 1).numpy(), atol=1e-6)


async def test_olmo2s_q_norm_is_explained_over_the_whole_projection(tmp_path: Path) -> None:
    app = model_app(str(tiny(tmp_path, "olmo2", CONFIGS["olmo2"])), TEXT, layer=0, head=2)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = app.explorer.stage_names()
        assert names.index("query") < names.index("query_norm") < names.index("query_rot")
        app.explorer.go_to_stage(names.index("query_norm"))
        await settle(pilot)
        assert "over the whole projection's 32 dimensions" in str(app.query_one("#stage-bar").render())
        shown = str(app.query_one(Inspector).render())
        assert "of the whole projection (4 heads, 32 dimensions; this head's are 16…23)" in shown, shown
