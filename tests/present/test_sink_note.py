"""The layer × head grid's sink line: the head that gives the first token most, and how many give it over half."""

from __future__ import annotations

import numpy as np

from attn_tui.present.grid import Grid
from attn_tui.present.model_view import HeadCell, ModelSummary, sink_note


def _summary(shares: list[list[float]]) -> ModelSummary:
    tokens = ("a", "b")
    grid = Grid(np.full((2, 2), 0.5), tokens, tokens, "query", "key", probability=True)
    cells = tuple(HeadCell(layer, head, grid, 0.5, 0.9, share) for layer, row in enumerate(shares)
                  for head, share in enumerate(row))
    return ModelSummary("m", tokens, len(shares), len(shares[0]), cells, grid)


def test_the_sink_line_names_the_strongest_sink_and_counts_the_heads_over_half() -> None:
    text = sink_note(_summary([[0.1, 0.6, 0.2], [0.5, 0.93, 0.51]]))
    assert "highest at layer 1 head 1 (0.930)" in text
    assert "3 of 6 heads give the first token more than half" in text  # 0.6, 0.93 and 0.51; 0.5 is not over
