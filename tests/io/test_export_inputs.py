"""A stage's JSON holds the inputs that stage is made from, not every layer's: one weights stage of a model is
that layer's input rows and the stage, and what was typed stays with whatever is exported of it."""

from __future__ import annotations

import json
from pathlib import Path

import torch

from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import ModelAsk
from attn_tui.io.export import select_stages, trace_to_json
from attn_tui.sources import run
from attn_tui.trace.reads import names_read
from tests.sources.tiny_models import SMALL, TEXT, tiny


def test_one_stage_of_a_model_writes_its_own_layer_input_only(tmp_path: Path) -> None:
    path = tiny(tmp_path, "llama", dict(SMALL, num_hidden_layers=4, num_key_value_heads=2))
    trace = run(ModelAsk(str(path), TEXT, device="cpu")).trace  # the statistics trace every layer
    assert {f"blocks.{layer}.X" for layer in range(4)} <= set(trace.inputs)
    chosen = select_stages(trace, "weights", 2, 1)
    one = json.loads(trace_to_json(trace, chosen))
    assert list(one["inputs"]) == ["blocks.2.X"]
    torch.testing.assert_close(torch.tensor(one["inputs"]["blocks.2.X"], dtype=torch.float64),
                               trace.inputs["blocks.2.X"].double())
    whole = json.loads(trace_to_json(trace))
    assert set(whole["inputs"]) == set(trace.inputs)
    assert len(json.dumps(one["inputs"])) * 3 < len(json.dumps(whole["inputs"]))
    # the weights are made from the layer's rotated queries and keys, which read X and the layer's W_q, W_k
    assert {"blocks.2.X", "blocks.2.W_q", "blocks.2.W_k"} <= names_read(trace, chosen)


def test_what_was_typed_is_written_with_any_stage_of_it() -> None:
    trace = run(load_samples()["lookup"].request).trace
    exported = json.loads(trace_to_json(trace, select_stages(trace, "weights")))
    assert list(exported["inputs"]) == ["Q", "K", "V"]  # no op reads them by name: they are the typed rows
