"""The app writes with DeepSeek's latent cache and Qwen3-Next's recurrent state: `n` writes, and every stage of
the newest step (a linear layer's state and implied row, the latent cache) can be visited and drawn."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sources.test_deepseek_v3 import CONFIGS as LATENT
from tests.sources.test_qwen3_next import CONFIGS as NEXT
from tests.sources.tiny_models import tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app, pytest.mark.models]
SIZE = (110, 34)


@pytest.mark.parametrize(("model_type", "config", "stage"), [
    ("deepseek_v3", LATENT["interleaved"], "latent_cache"),
    ("qwen3_next", NEXT["dense"], "state"),
])
async def test_n_writes_and_every_stage_of_the_step_is_on_show(tmp_path: Path, model_type: str,
                                                               config: dict[str, object], stage: str) -> None:
    folder = tiny(tmp_path, model_type, config)
    app = model_app(str(folder), "the cat sat")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert app.trace is not None and app.trace.steps() == 2
        places = app.explorer.places
        newest = [i for i, p in enumerate(places) if p.step == 1]
        assert any(places[i].name == stage for i in newest)
        shown_names = set()
        for layer in range(app.trace.layers):  # a linear layer has no scores: it shows the step's stages it has
            app.explorer.layer_index = layer
            for index in newest:
                app.explorer.go_to_place(index)
                await pilot.pause()
                assert app.view.place.step == 1 and app.view.place.layer in (layer, None)  # the sampler: none
                shown_names.add(app.view.place.name)
        assert {"weights", stage} <= shown_names
        app.explorer.layer_index = 0
        shown = next(i for i in newest if places[i].name == stage)
        app.explorer.go_to_place(shown)
        await pilot.pause()
        if stage == "state":  # d_k × d_v whatever the step: the same as the prefill's
            assert app.view.grid.values.shape == (8, 6)
        else:  # the prompt's rows and one more: [ĉ_kv | k_rot]
            assert app.view.grid.values.shape[1] == 8 + 4
