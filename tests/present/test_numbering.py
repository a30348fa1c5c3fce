"""Steps, tiles and heads are counted from 0 in every view: the caption, the stage picker, the inspector, the CLI
table; and a recorded trace is described by what was recorded."""

from __future__ import annotations

import io

import torch
from rich.console import Console

import attn_tui
from attn_tui.attention.engine import compute
from attn_tui.explain.cell import explain
from attn_tui.present.positions import Position, place_title, positions
from attn_tui.present.printed import printed_trace
from attn_tui.present.recorded import recorded_rows
from attn_tui.present.stage_view import stage_view, tile_caption
from attn_tui.render.stage_table import print_trace
from attn_tui.trace.ops import Place
from tests.conftest import sentence
from tests.sources.recorder import modules as m

FLASH = sentence("나는 어제 친구와 함께 학교에 갔다 <pad>", variant="flash", tile=3)


def test_a_flash_tile_is_counted_from_zero_in_caption_picker_inspector_and_table() -> None:
    trace = compute(FLASH)
    tiles = trace.steps()
    assert tiles == 3  # 7 keys in tiles of 3
    for t in range(tiles):
        keys = trace.stage("tile_scores", step=t).axes[1].labels
        assert tile_caption(trace, t).startswith(f"key tile {t} of {tiles}: keys {3 * t}…{3 * t + len(keys) - 1}")
        assert place_title(trace, Position("rescale", t)) == f"tile {t} · rescale"
        assert explain(trace, Place("tile_scores", step=t), (0, 0)).lines[0] == f"column 0 of tile {t} is key {3 * t}"
    out = io.StringIO()
    print_trace(printed_trace(trace, [trace.stage("running_max", step=0)]), Console(file=out, width=120))
    assert "running_max · tile 0" in out.getvalue()  # a tile, named as one (was a generic "step")


def test_every_place_has_a_distinct_title_for_the_picker() -> None:
    trace = compute(FLASH)
    places = positions(trace)
    titles = [place_title(trace, p) for p in places]
    assert len(set(titles)) == len(places) and titles[0] == "embedding" and titles[-1] == "output"


def test_recorded_rows_say_what_ran_and_a_variant_has_none() -> None:
    assert recorded_rows(compute(FLASH)) is None
    torch.manual_seed(0)
    module = m.MultiHeadAttention(8, 2)
    x = torch.randn(1, 3, 8)
    with attn_tui.record(tokens=["a", "b", "c"]) as rec:
        module(x)
        module(x)
    trace = rec.trace
    rows = {str(label): str(value) for label, value in recorded_rows(trace) or ()}
    assert rows["file"] == "(a notebook or a session)" and rows["code"].startswith("MultiHeadAttention (")
    assert rows["calls"] == "2 calls" and rows["heads"] == "2" and rows["queries"] == "a b c"
    assert rows["line"].startswith("modules.py:") and "softmax" in rows["line"]
    view = stage_view(trace, "weights", None, 0, 0, 0, None)
    assert f"A {view.grid.rows}×{view.grid.cols}" in rows["shapes"]  # one step and one head, as drawn
