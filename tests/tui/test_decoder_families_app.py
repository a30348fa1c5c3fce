"""Pilot: a local Qwen3 folder in the app, whose layer 0 is global and layer 1 slides: the layer × head grid
says which layers are local and their window (a note, and `w3` under layer 1's label), and the stage caption
says the layer on show."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

from tests.sources.test_families_decoders import CONFIGS
from tests.sources.tiny_models import TEXT, tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models, pytest.mark.app]


def _qwen3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The folder by a relative name, so the app's title (and a snapshot) does not carry the temporary path."""
    tiny(tmp_path, "qwen3", CONFIGS["qwen3"])
    monkeypatch.chdir(tmp_path)
    return "qwen3"


async def test_the_grid_says_which_layers_are_local(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rich.console import Console
    from textual.widgets import Static

    from attn_tui.tui.widgets.model_grid import ModelGrid
    from attn_tui.tui.widgets.stage_bar import StageBar

    app = model_app(_qwen3(tmp_path, monkeypatch), TEXT, layer=1, head=2)
    async with app.run_test(size=(110, 40)) as pilot:
        await settle(pilot)
        bar = str(app.query_one(StageBar).render())
        assert "layer 1: sliding window 3 · rotary θ=10000 · scale 1/√8" in bar, bar
        await pilot.press("g")
        await pilot.pause()
        console = Console(width=200, record=True, color_system=None)
        console.print(app.query_one(ModelGrid).query_one("#model-grid-body", Static).content)
        body = console.export_text()
        labels = [line.split()[0] for line in body.splitlines() if line.strip()]
        assert labels[labels.index("L1") + 1] == "w3" and labels[labels.index("L0") + 1] != "w3"
        assert "local layers 1 (sliding window 3) · global layers 0" in body, body


def test_the_grid_of_a_model_with_a_sliding_layer(snap_compare, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                  ) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()

    assert snap_compare(model_app(_qwen3(tmp_path, monkeypatch), "the cat sat on the mat", layer=1, head=2),
                        terminal_size=(110, 36), run_before=run_before)
