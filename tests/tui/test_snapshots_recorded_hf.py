"""Snapshots of a Hugging Face model recorded as it runs by default (sdpa): a sliding window's mask told by its
reasons in the inspector, and the kernel's output beside A·V recomputed."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("transformers")

import torch
import transformers

import attn_tui
from attn_tui.ask.settings import RecordAsk
from tests.sources.tiny_models import ALTERNATE, SMALL, tiny
from tests.tui.helpers import RecordingApp, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]

CONFIG = dict(SMALL, num_hidden_layers=2, num_key_value_heads=2, head_dim=8, query_pre_attn_scalar=8,
              sliding_window=3, layer_types=ALTERNATE[:2])


def recorded_gemma(tmp_path: Path) -> RecordingApp:
    path = tiny(tmp_path, "gemma3_text", CONFIG)
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path).eval()  # sdpa, as a user's script gets it
    batch = tokenizer("the cat sat on the mat", return_tensors="pt")
    with torch.no_grad(), attn_tui.record(tokens=tokenizer.convert_ids_to_tokens(batch["input_ids"][0])) as rec:
        model(**batch)
    return RecordingApp(record=RecordAsk().keeping(rec.trace))


def _at(stage: str, *keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        names = pilot.app.explorer.stage_names()  # keyed by the module's path: model.layers.0.self_attn.masked
        pilot.app.explorer.go_to_stage(next(i for i, name in enumerate(names) if name.endswith(f".{stage}")))
        await pilot.press(*keys)
        await settle(pilot)

    return run_before


def test_a_sliding_window_cell_says_why_it_is_hidden(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(recorded_gemma(tmp_path), terminal_size=(120, 36),
                        run_before=_at("masked", *("shift+down",) * 5))


def test_the_kernels_output_beside_the_recomputed_one(snap_compare, tmp_path: Path) -> None:
    assert snap_compare(recorded_gemma(tmp_path), terminal_size=(120, 36), run_before=_at("output"))
