"""Pilot: Qwen3-Next's linear value heads past num_attention_heads in the app. On a linear layer ] walks its own
4 value heads (twice the 2 attention heads); moving to a full-attention layer clamps the head to that layer's."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from attn_tui.tui.widgets.model_grid import ModelGrid
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]

SIZE = (110, 34)


async def test_a_high_value_head_on_a_linear_layer_then_a_full_layer_clamps_it(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tests.sources.test_qwen3_next_heads import WIDE
    from tests.sources.tiny_models import tiny

    path = tiny(tmp_path, "qwen3_next", WIDE, name="wide")
    app = model_app(str(path), "the cat sat", layer=0, head=0)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert (app.trace.heads, app.trace.heads_at(0)) == (2, 4)
        heads = []
        for _ in range(3):
            await pilot.press("right_square_bracket")
            await settle(pilot)
            heads.append(app.explorer.head)
        assert heads == [1, 2, 3]  # past the 2 attention heads: the linear layer's own value heads
        assert app.view.place.head == 3 and app.view.place.layer == 0
        assert "layer 0 head 3" in str(app.query_one("#stage-bar").render())
        await pilot.press("g")  # the grid: as wide as the linear layer's 4 heads, the full layer's row blank past 2
        await pilot.pause()
        grid = app.query_one(ModelGrid)
        assert app.explorer.panel == "model_grid" and grid.current == (0, 3)
        console = Console(width=300, record=True, file=io.StringIO())
        console.print(app.query_one("#model-grid-body").content)
        text = console.export_text()
        assert "4 heads" in text and "layer 0 head 3" in text, text
        await pilot.press("g")
        await pilot.pause()
        await pilot.press("right_curly_bracket")  # the full-attention layer has 2 heads: clamped to its last
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (1, 1)
        assert app.view.place.layer == 1 and app.view.place.head == 1
        await pilot.press("right_square_bracket")  # and ] wraps within that layer's 2
        await settle(pilot)
        assert app.explorer.head == 0
        await pilot.press("left_square_bracket", "left_curly_bracket")  # back on the linear layer: ] reaches 3 again
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (0, 1)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await settle(pilot)
        assert app.explorer.head == 3
