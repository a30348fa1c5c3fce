"""Every family in the app: a tiny folder of each (llama with grouped kv heads, gemma3_text with sliding layers,
gemma2 with its soft cap, bert) through the layer × head grid, compare (another head, another layer, another
model folder) and export (JSON and npz), each number checked against transformers' own `output_attentions`."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console
from textual.widgets import OptionList

pytest.importorskip("transformers")

from attn_tui.present.model_view import summary_of
from attn_tui.sources.families import routing
from attn_tui.tui.screens.choose import ChoiceScreen
from attn_tui.tui.screens.export import ExportAsk
from attn_tui.tui.widgets.compare_view import CompareView
from attn_tui.tui.widgets.model_grid import ModelGrid
from tests.sources.test_families import CONFIGS
from tests.sources.tiny_models import TEXT, reference, tiny
from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]

SIZE = (130, 40)
LAYER, HEAD = 1, 1  # where A opens: a global layer after a sliding one in the alternating families


async def _compare(pilot, key: str, index: int = 0) -> None:
    """c, then the `index`-th choice whose key is `key`; waits for B."""
    app = pilot.app
    await pilot.press("c")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ChoiceScreen)
    choice = [n for n, (_label, c) in enumerate(screen.options) if c.key == key][index]
    screen.query_one(OptionList).highlighted = choice
    await pilot.press("enter")
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if app.explorer.panel == "compare" and app.query_one(CompareView).heatmap("b").grid is not None:
            return
    raise AssertionError("B never arrived")


def _grid_text(app) -> str:
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(app.query_one("#model-grid-body").content)
    return console.export_text()


async def _export(pilot, what: str, fmt: str, path: Path) -> None:
    app = pilot.app
    app.exporting.export(ExportAsk(what, fmt, path))
    for _ in range(100):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if path.exists():
            return
    raise AssertionError(f"nothing was written to {path}: {app.notices}")


@pytest.mark.parametrize("model_type", ["llama", "gemma3_text", "gemma2", "bert"])
async def test_grid_compare_and_export_work_for_the_family(tmp_path: Path, model_type: str) -> None:
    a_path = tiny(tmp_path, model_type, CONFIGS[model_type], name=f"a-{model_type}")
    b_type = "bert" if model_type != "bert" else "llama"
    b_path = tiny(tmp_path, b_type, CONFIGS[b_type], name=f"b-{b_type}")
    expected = [w.double().numpy() for w in reference(a_path, TEXT)]  # (heads, N, N) per layer
    expected_b = [w.double().numpy() for w in reference(b_path, TEXT)]
    app = model_app(str(b_path), TEXT)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)  # B first: a model opened this session is offered as compare's B
        app.editing.choose_model(str(a_path))
        await settle(pilot)
        trace = app.trace
        assert trace.meta.family == routing()[model_type] and trace.layers == len(expected)
        await pilot.press("right_curly_bracket", "right_square_bracket")  # layer 1, head 1
        await settle(pilot)
        assert (app.explorer.layer_index, app.explorer.head) == (LAYER, HEAD)

        # The grid: every layer × head, each cell transformers' own weights; local layers say their window.
        await pilot.press("g")
        await pilot.pause()
        assert app.explorer.panel == "model_grid" and app.query_one(ModelGrid).current == (LAYER, HEAD)
        summary = summary_of(app.shown)
        assert (summary.layers, summary.heads) == (len(expected), expected[0].shape[0])
        for cell in summary.cells:
            np.testing.assert_allclose(cell.grid.values, expected[cell.layer][cell.head], atol=1e-5)
        windows = [trace.geometry_of(n).window for n in range(trace.layers)]
        body = _grid_text(app)
        local = [f"L{n}" for n, w in enumerate(windows) if w is not None]
        assert ("local layers" in body) == bool(local)
        if local:
            assert f"w{windows[0]}" in body and f"local layers {', '.join(local).replace('L', '')}" in body
        if model_type in ("gemma3_text", "gemma2"):
            assert windows == [3, None, 3, None]
        if model_type == "llama":
            assert "key/value head 1" in body  # grouped-query: which key/value head each query head reads
        await pilot.press("g")
        await pilot.pause()

        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await settle(pilot)
        np.testing.assert_allclose(app.view.grid.values, expected[LAYER][HEAD], atol=1e-5)
        view = app.query_one(CompareView)
        # Another head of the same layer: read from A's own trace.
        await _compare(pilot, "head")
        other = app.comparison.head
        np.testing.assert_allclose(view.heatmap("b").grid.values, expected[LAYER][other], atol=1e-5)
        np.testing.assert_allclose(view.heatmap("diff").grid.values, expected[LAYER][other] - expected[LAYER][HEAD],
                                   atol=1e-5)
        await pilot.press("c")
        # Another layer, same head: layer 0 slides in the alternating families.
        await _compare(pilot, "layer")
        assert app.comparison.layer == 0 and app.explorer.shown_b is None
        np.testing.assert_allclose(view.heatmap("b").grid.values, expected[0][HEAD], atol=1e-5)
        await pilot.press("c")
        # Another model folder on the same sentence: its own weights at the same layer and head.
        await _compare(pilot, "other")
        assert app.explorer.shown_b.trace.meta.family == routing()[b_type]
        np.testing.assert_allclose(view.heatmap("b").grid.values, expected_b[LAYER][HEAD], atol=1e-5)
        if len(expected) > len(expected_b):  # A's last layer: B has none so deep and shows its own last
            await pilot.press(*["right_curly_bracket"] * (len(expected) - 1 - LAYER))
            await settle(pilot)
            np.testing.assert_allclose(app.view.grid.values, expected[-1][HEAD], atol=1e-5)
            np.testing.assert_allclose(view.heatmap("b").grid.values, expected_b[-1][HEAD], atol=1e-5)
            await pilot.press(*["left_curly_bracket"] * (len(expected) - 1 - LAYER))
            await settle(pilot)
        await pilot.press("c")
        assert app.comparison is None

        # Export: the whole trace as JSON and as npz, every layer's and head's weights as transformers has them.
        await _export(pilot, "trace", "json", tmp_path / "trace.json")
        doc = json.loads((tmp_path / "trace.json").read_text(encoding="utf-8"))
        weights = [s for s in doc["stages"] if s["name"] == "weights"]
        assert {(s["layer"], s["head"]) for s in weights} == {(n, h) for n in range(len(expected))
                                                              for h in range(expected[0].shape[0])}
        for stage in weights:
            data = np.array(stage["data"], dtype=float)  # masked cells are 0.0 after the softmax: all finite
            np.testing.assert_allclose(data, expected[stage["layer"]][stage["head"]], atol=1e-5)
        assert len(doc["geometry"]) == len(expected)
        await _export(pilot, "trace", "npz", tmp_path / "trace.npz")
        with np.load(tmp_path / "trace.npz") as archive:
            keys = {stage["key"] for stage in weights}
            assert keys <= set(archive.keys())
            for stage in weights:
                np.testing.assert_allclose(archive[stage["key"]], expected[stage["layer"]][stage["head"]], atol=1e-5)
        assert not [n for n in app.notices if n.severity == "error"]
