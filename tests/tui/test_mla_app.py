"""The app on multi-head latent attention: the `mla` variant stepped stage by stage, and a DeepSeek-V3 folder."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import Checkbox

from attn_tui.ask.variants import VARIANTS
from attn_tui.tui.widgets.inspector import Inspector
from tests.tui.helpers import model_app, sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

SIZE = (110, 34)


async def _walk(pilot, last: str) -> list[tuple[str, int | None]]:
    """home, then right until the stage `last`: each (name, head) on the way."""
    app = pilot.app
    await pilot.press("home")
    seen = [(app.view.name, app.view.head)]
    for _ in range(60):
        if app.view.name == last:
            break
        await pilot.press("right")
        seen.append((app.view.name, app.view.head))
    return seen


async def test_stepping_mla_walks_the_latent_path_then_every_heads_scores() -> None:
    app = sample_app("mla_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = await _walk(pilot, "projected")
        names = [name for name, _head in seen]
        expected = [s for s in VARIANTS["mla"].stages if s != "query_absorbed"]
        assert names == ["embedding", *expected]
        at = names.index("latent_cache")
        app.explorer.go_to_stage(app.explorer.stage_names().index("latent_cache"))
        await pilot.pause()
        assert app.view.name == "latent_cache" and at > names.index("kv_latent_norm")
        app.explorer.go_to_stage(app.explorer.stage_names().index("scores"))
        await pilot.press("]")  # head 1
        await pilot.pause()
        assert (app.view.name, app.view.head) == ("scores", 1)
        assert "q_nope[0]·k_nope[0] + Q_rot[0]·K_rot[0]" in str(app.query_one(Inspector).render())
        app.query_one("#set-absorbed", Checkbox).value = True  # the pane's box: W_uk folded into the query
        await settle(pilot)
        names = app.explorer.stage_names()
        assert app.trace.meta.settings.value("absorbed") and "query_absorbed" in names and "key" not in names


@pytest.mark.models
async def test_a_deepseek_v3_folder_opens_on_its_latent_stages(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.sources.tiny_models import LATENT, TEXT, tiny

    path = tiny(tmp_path, "deepseek_v3", LATENT)
    app = model_app(str(path), TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = app.explorer.stage_names()
        assert {"q_latent", "kv_latent", "key_rope", "latent_cache", "key_nope", "weights"} <= set(names)
        app.explorer.go_to_stage(names.index("latent_cache"))
        await pilot.pause()
        assert app.view.name == "latent_cache"
