"""The whole-model view shades each layer's own mask: a Gemma-style model alternating a sliding window and global
attention hides the window's keys on its sliding layers only; the caption says which layer is which."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

pytest.importorskip("transformers")

from attn_tui.ask.settings import ModelAsk
from attn_tui.present.model_view import summary_of
from attn_tui.present.stage_view import place_caption, stage_view
from attn_tui.sources import run
from tests.sources.test_families import TEXT, _tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]


@pytest.mark.parametrize("model_type", ["gemma2", "gemma3_text"])
def test_blocked_and_the_grid_are_each_layers_own_mask(tmp_path: Path, model_type: str) -> None:
    shown = run(ModelAsk(str(_tiny(tmp_path, model_type)), TEXT))
    trace, stats = shown.trace, shown.stats
    assert stats is not None and stats.blocked is not None
    n = len(trace.query_tokens)
    causal = torch.ones(n, n, dtype=torch.bool).tril()
    window = torch.arange(n)[None, :] > torch.arange(n)[:, None] - 3
    assert stats.blocked.shape == (trace.layers, n, n)
    summary = summary_of(shown)
    assert summary is not None
    for layer in range(trace.layers):
        allowed = causal & window if layer % 2 == 0 else causal  # written out here, not read from the trace
        assert torch.equal(stats.blocked[layer], ~allowed)
        for head in range(trace.heads):
            cell = summary.cell(layer, head)
            shaded = cell.grid.masked_block(0, n, 0, n)
            assert shaded is not None and (shaded == (~allowed).numpy()).all()
            assert ((stats.weights[layer, head] > 0) == allowed).all()  # the shading is where the weights are 0
    assert not torch.equal(stats.blocked[0], stats.blocked[1])


def test_the_caption_says_each_layers_geometry(tmp_path: Path) -> None:
    trace = run(ModelAsk(str(_tiny(tmp_path, "gemma2")), TEXT)).trace
    captions = [place_caption(trace, stage_view(trace, "weights", layer, 0, 0), layer, 0) for layer in (0, 1)]
    assert captions[0].endswith("\nlayer 0: sliding window 3 · rotary θ=10000 · scale 1/√8 · cap 2")
    assert captions[1].endswith("\nlayer 1: causal · rotary θ=10000 · scale 1/√8 · cap 2")


def test_the_export_carries_each_layers_own_geometry(tmp_path: Path) -> None:
    """A model alternating sliding and global layers exports both geometries; read back, they are the trace's."""
    import json

    from attn_tui.io.export import export, read_geometry

    trace = run(ModelAsk(str(_tiny(tmp_path, "gemma3_text")), TEXT)).trace
    for layer in range(trace.layers):
        trace.fill(layer, 0)
    path = export(trace, list(trace)[:1], "json", tmp_path / "gemma3.json")
    geometry = read_geometry(json.loads(path.read_text(encoding="utf-8"))["geometry"])
    assert geometry == trace.geometry and sorted(geometry) == list(range(trace.layers))
    assert [(g.mask, g.window) for g in geometry.values()] == [("sliding", 3), ("causal", None)] * 2
