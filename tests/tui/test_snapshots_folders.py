"""Snapshots of a model folder in the app (reviewed by eye before being accepted): the path field completing a
folder and marking it as a model, and the layer × head grid of a model whose layers alternate local and global.

The folders are opened by relative names from a fixed working folder, so the screen is the same every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select

from tests.tui.helpers import model_app, sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]


@pytest.fixture
def gemma3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pytest.importorskip("transformers")
    from tests.sources.test_families import CONFIGS
    from tests.sources.tiny_models import tiny

    (tmp_path / "models").mkdir()
    tiny(tmp_path / "models", "gemma3_text", CONFIGS["gemma3_text"], name="gemma3-tiny")
    (tmp_path / "models" / "notes").mkdir()
    monkeypatch.chdir(tmp_path)
    return "models/gemma3-tiny"


def test_the_path_field_completes_a_model_folder(snap_compare, gemma3: str) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.query_one("#set-model", Select).value = "other"
        await pilot.pause()
        await pilot.press(*"models/g")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        path = pilot.app.query_one("#set-model-path", Input)
        assert path._suggestion == "models/gemma3-tiny/"
        path.cursor_blink = False  # the picture must not depend on when the cursor blinked
        await pilot.pause()

    assert snap_compare(sample_app("lookup"), terminal_size=(100, 32), run_before=run_before)


def test_the_grid_of_a_model_with_local_layers(snap_compare, gemma3: str) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()

    assert snap_compare(model_app(gemma3, "the cat sat", layer=1, head=1), terminal_size=(110, 40),
                        run_before=run_before)


def test_compare_a_global_layer_with_a_local_one(snap_compare, gemma3: str) -> None:
    from textual.widgets import OptionList

    from attn_tui.tui.widgets.compare_view import CompareView

    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await settle(pilot)
        await pilot.press("c")
        await pilot.pause()
        options = app.screen.options
        app.screen.query_one(OptionList).highlighted = next(n for n, (_label, c) in enumerate(options)
                                                            if c.key == "layer" and c.layer == 0)
        await pilot.press("enter")
        await settle(pilot)
        await pilot.pause()
        assert app.query_one(CompareView).heatmap("b").grid is not None

    assert snap_compare(model_app(gemma3, "the cat sat on the mat", layer=1, head=1), terminal_size=(130, 40),
                        run_before=run_before)
