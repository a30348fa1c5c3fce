"""The door computes what was asked: a caller that reads one layer's stages does not trace every layer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from attn_tui.ask.settings import Ask, ModelAsk
from attn_tui.cli import main
from attn_tui.sources import run
from attn_tui.trace.shown import Shown
from tests.sources.tiny_models import SMALL, TEXT, reference, tiny


def test_stages_of_one_layer_trace_that_layer_and_the_statistics_every_layer(tmp_path: Path) -> None:
    path = tiny(tmp_path, "llama", dict(SMALL, num_hidden_layers=4, num_key_value_heads=2))
    ask = ModelAsk(str(path), TEXT, layer=2, head=1, device="cpu")
    theirs = reference(path)  # (heads, N, N) per layer
    asked = run(ask, model_statistics=False)
    assert asked.stats is None and {place.layer for place in asked.trace.stages} == {2}
    torch.testing.assert_close(asked.trace.tensor("weights", 2, 1), theirs[2][1])
    whole = run(ask)
    assert whole.stats is not None and {place.layer for place in whole.trace.stages} == {0, 1, 2, 3}
    torch.testing.assert_close(whole.stats.weights, torch.stack(theirs))  # (layers, heads, N, N)


def test_the_stages_command_leaves_the_statistics_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    import attn_tui.sources as sources

    asked: list[bool] = []

    def door(ask: Ask, *args: Any, **kwargs: Any) -> Shown:
        asked.append(kwargs.get("model_statistics", True))
        return run(ask, *args, **kwargs)

    monkeypatch.setattr(sources, "run", door)
    path = tiny(tmp_path, "llama", dict(SMALL, num_key_value_heads=2))
    assert main(["stages", "--model", str(path), "--text", TEXT, "--layer", "1", "--head", "0", "--stage", "weights",
                 "--format", "csv", "--device", "cpu"]) == 0
    assert asked == [False] and capsys.readouterr().out.count("\n") > 1
