"""Which layers of a model are local (a sliding window) and which global, as the layer × head grid and the
heads table say it: read from each layer's recorded geometry, never from the kind of model."""

from __future__ import annotations

import numpy as np
from rich.cells import cell_len
from rich.console import Console

from attn_tui import i18n
from attn_tui.present.geometry_line import geometry_line
from attn_tui.present.grid import Grid
from attn_tui.present.layer_windows import layer_ranges, window_labels, window_note, windows_of
from attn_tui.present.model_view import HeadCell
from attn_tui.render.model_grid import grid_width, model_grid_table
from attn_tui.trace.geometry import LayerGeometry, Positional
from attn_tui.trace.meta import TransformerRun
from attn_tui.trace.stage import Trace

GEMMA3_270M = tuple(None if (n + 1) % 6 == 0 else 512 for n in range(18))  # 5 local layers, then 1 global


def test_consecutive_layers_read_as_spans() -> None:
    assert layer_ranges([0, 1, 2, 3, 4, 6, 7, 17]) == "0–4, 6–7, 17"
    assert layer_ranges([3]) == "3" and layer_ranges([]) == ""


def test_the_note_names_local_and_global_layers_and_each_window() -> None:
    assert window_note(GEMMA3_270M) == "local layers 0–4, 6–10, 12–16 (sliding window 512) · global layers 5, 11, 17"
    assert window_note((4096, 4096)) == "local layers 0–1 (sliding window 4096) · no global layer"
    assert window_note((2, None, 8)) == "local layers 0 (sliding window 2) · local layers 2 (sliding window 8) · " \
                                        "global layers 1"
    assert window_note((None, None)) == "" and window_note(()) == ""


def test_each_sliding_layer_is_labelled_with_its_window_in_the_grid() -> None:
    labels = window_labels((3, None, 4096))
    assert labels == ("w3", "", "w4096")
    grid = Grid(np.eye(2), ("a", "b"), ("a", "b"), "query", "key")
    cells = [HeadCell(layer, 0, grid, 0.5, 1.0, 0.5) for layer in range(3)]
    console = Console(width=60, record=True, color_system=None)
    console.print(model_grid_table(cells, 3, 1, (0, 0), labels))
    lines = console.export_text().splitlines()
    at = {name: n for n, line in enumerate(lines) for name in ("L0", "L1", "L2", "w3", "w4096") if name in line}
    assert at["w3"] == at["L0"] + 1 and at["w4096"] == at["L2"] + 1  # the window under its layer's label
    assert not any("w" in line.split()[0] for line in lines[at["L1"]:at["L2"]] if line.split())  # global: none
    assert grid_width(cells, 1, labels) == grid_width(cells, 1) + 2  # the label column widens for `w4096`
    assert grid_width(cells, 1, ("", "w3")) == grid_width(cells, 1)


def test_the_words_are_korean_too_and_fit_their_cells() -> None:
    i18n.set_language("ko")
    try:
        note = window_note((3, None))
        labels = window_labels((3, None))
    finally:
        i18n.set_language("en")
    assert note == "국소 층 0 (슬라이딩 윈도우 3) · 전역 층 1" and labels == ("창3", "")
    assert cell_len(labels[0]) == 3  # 창 is two cells wide: the grid's label column measures cells


def test_windows_come_from_each_layers_recorded_geometry() -> None:
    run = TransformerRun(model="granite", family="granite", layers=2, heads=4, scale=0.07, causal=True, kv_heads=2,
                         kv_map=(0, 0, 1, 1), rope_base=1e4)
    trace = Trace(run, (), (), "cpu", "float32")
    for layer, window in enumerate((3, None)):
        kind = "sliding" if window else "causal"
        trace.geometry[layer] = LayerGeometry(kind, window, Positional("rotary", 1e4), 0.07,
                                              scale_name="attention_multiplier")
    assert windows_of(trace) == (3, None)
    assert geometry_line(trace, 0) == "layer 0: sliding window 3 · rotary θ=10000 · scale 0.07 (attention_multiplier)"
