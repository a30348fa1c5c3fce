"""Axis labels made printable once per axis, however many grids are drawn from it."""

from __future__ import annotations

import numpy as np

from attn_tui.present.grid import Grid
from attn_tui.present.text import printable_labels


def test_an_axis_is_made_printable_once_and_shared_by_every_grid() -> None:
    tokens = tuple(f"w{i}" for i in range(5000)) + ("\x1b[31mred",)
    first = Grid(np.zeros((1, 1)), tokens, tokens)
    second = Grid(np.ones((1, 1)), tokens, tokens)
    assert first.row_labels[-1] == "␛[31mred"  # ESC drawn, not sent to the terminal
    assert first.row_labels is second.row_labels is second.col_labels  # one tuple, not one per keypress
    assert printable_labels(tuple(list(tokens))) == first.row_labels  # an equal tuple: worked out afresh, alike
