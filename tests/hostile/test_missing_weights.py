"""Weight files that lack a weight the model needs (the same tensor left out of every layer, which no count of
layers reveals): transformers would fill it with random numbers, and attn-tui would trace them as the model's; it
is refused in one line instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.helpers import attn_tui

pytest.importorskip("transformers")
pytestmark = [pytest.mark.slow, pytest.mark.models]

LEFT_OUT = {"llama": "self_attn.k_proj.weight", "bert": "attention.self.key.weight"}


@pytest.mark.parametrize("model_type", sorted(LEFT_OUT))
def test_a_weight_left_out_of_every_layer_is_refused(tmp_path: Path, model_type: str) -> None:
    from safetensors.torch import load_file, save_file

    from tests.sources.tiny_models import SMALL, tiny

    folder = tiny(tmp_path, model_type, SMALL)
    assert attn_tui("stages", "--model", str(folder), "--text", "the cat sat").code == 0  # whole, it opens
    weights = load_file(folder / "model.safetensors")
    kept = {name: tensor for name, tensor in weights.items() if not name.endswith(LEFT_OUT[model_type])}
    assert len(kept) == len(weights) - SMALL["num_hidden_layers"]  # one tensor gone from each layer
    save_file(kept, folder / "model.safetensors", metadata={"format": "pt"})
    outcome = attn_tui("stages", "--model", str(folder), "--text", "the cat sat")
    assert outcome.refused("weights its files lack, first '"), outcome
    assert "names 2 weights" in outcome.err and ".0." in outcome.err  # both layers, the first named
