"""A forward pass that went NaN or infinite says where it first did, so no stage traced from it is silently NaN."""

from __future__ import annotations

import math
from types import SimpleNamespace

import torch

from attn_tui.sources.model_run import non_finite


def test_the_first_layer_whose_input_or_weights_are_not_finite_is_named() -> None:
    loaded = SimpleNamespace(layers=3)
    hidden = [torch.zeros(4, 8) for _ in range(4)]
    weights = [torch.full((2, 4, 4), 0.25) for _ in range(3)]
    assert non_finite(loaded, tuple(hidden), tuple(weights)) == []  # type: ignore[arg-type]
    weights[1][1, 2, 3] = math.nan
    found = non_finite(loaded, tuple(hidden), tuple(weights))  # type: ignore[arg-type]
    assert [str(m) for m in found] == ["layer 1's weights hold NaN or infinite values in heads 1: its scores "
                                       "overflowed or a weight of its attention is not finite"]
    hidden[1][0, 0] = math.inf  # earlier than the weights it feeds: the input is named
    (found,) = non_finite(loaded, tuple(hidden), tuple(weights))  # type: ignore[arg-type]
    assert str(found).startswith("layer 1's input holds NaN or infinite values (float32 overflowed")
