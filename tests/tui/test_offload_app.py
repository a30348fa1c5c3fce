"""Pilot: a model bigger than --max-memory opens in the app with its layers offloaded to disk; the note under the
sentence and the grid of heads say which, and a layer read from disk shows the whole model's weights."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

pytest.importorskip("transformers")
pytest.importorskip("accelerate")

from attn_tui.sources import transformer
from tests.sources.test_offload import CONFIGS, _budget
from tests.sources.tiny_models import TEXT, reference, tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]
SIZE = (100, 32)
NAME = "tiny-llama"  # opened by a relative path from the test's folder: the same name on every screen


@pytest.fixture
def offloaded_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("ATTN_TUI_CACHE_DIR", str(tmp_path / "cache"))
    path = tiny(tmp_path, "llama", CONFIGS["llama"], name=NAME)
    monkeypatch.chdir(tmp_path)
    transformer.model_run.cache_clear()  # a model of this name from another test's folder is another model
    transformer.loaded_model.cache_clear()
    app = model_app(NAME, TEXT, layer=4, head=1)
    app.max_memory = _budget(path, "llama")
    yield app, path
    transformer.model_run.cache_clear()
    transformer.loaded_model.cache_clear()


async def test_the_app_says_which_layers_are_offloaded(offloaded_app) -> None:
    app, path = offloaded_app
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.meta.offloaded == ("", "", "disk", "disk", "disk", "disk")
        assert "layers 2–5 offloaded to disk" in str(app.query_one("#tokens").render())
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await settle(pilot)
        np.testing.assert_allclose(app.view.grid.values, reference(path)[4][1].numpy(), atol=1e-5)
        await pilot.press("g")
        await settle(pilot)
        assert app.explorer.panel == "model_grid"
        console = Console(file=io.StringIO(), width=200, record=True)
        console.print(app.query_one("#model-grid-body").content)
        assert "layers 2–5 offloaded to disk" in console.export_text()


def test_snapshot_of_an_offloaded_model(offloaded_app, snap_compare) -> None:
    app, _path = offloaded_app

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("g")
        await settle(pilot)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
