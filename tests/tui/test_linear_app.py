"""Pilot: linear attention in the app, as the `linear` variant (its sample) and as Qwen3-Next's layers from a
local folder: → walks the state token by token, then the implied matrix and the output; the inspector writes a
state entry out; a full-attention layer of the same model shows its gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_tui.tui.widgets.inspector import Inspector
from tests.tui.helpers import model_app, sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

SIZE = (110, 34)


async def _walk(pilot, app) -> list[tuple[str, int | None]]:  # type: ignore[no-untyped-def]
    seen = [(app.view.name, app.view.step)]
    while app.view.name != "output":
        await pilot.press("right")
        seen.append((app.view.name, app.view.step))
    return seen


async def test_stepping_the_linear_variant_walks_the_state_token_by_token() -> None:
    app = sample_app("linear_state_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        seen = await _walk(pilot, app)
        tokens = len(app.trace.query_tokens)
        assert seen == [("embedding", None), ("query", None), ("key", None), ("value", None), ("query_l2", None),
                        ("key_l2", None), ("decay", None), ("beta", None),
                        *[("state", t) for t in range(tokens)], ("implied", None), ("output", None)]
        names = [(p.name, p.step) for p in app.explorer.places]
        app.explorer.go_to_place(names.index(("state", 3)))
        await pilot.pause()
        assert "recalls" in str(app.query_one(Inspector).render())


async def test_a_qwen3_next_folder_steps_its_linear_layer_and_gates_its_full_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("transformers")
    from tests.sources.test_qwen3_next import CONFIGS
    from tests.sources.tiny_models import tiny

    tiny(tmp_path, "qwen3_next", CONFIGS["dense"])
    monkeypatch.chdir(tmp_path)
    app = model_app("qwen3_next", "the cat sat", layer=0, head=1)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        seen = await _walk(pilot, app)
        tokens = len(app.trace.query_tokens)
        assert [s for s in seen if s[0] == "state"] == [("state", t) for t in range(tokens)]
        assert seen[-2:] == [("implied", None), ("output", None)]
        caption = str(app.query_one("#stage-bar").render())
        assert "layer 0 head 1" in caption and "linear attention: a recurrent state" in caption, caption
        names = {p.name for p in app.trace.stages if p.layer == 1}
        assert {"gate", "gated", "weights"} <= names
