"""A config.json that names more weights than its files hold: transformers would fill the rest with random numbers,
and attn-tui would trace them as the model's; it is refused in one line instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.hostile.helpers import attn_tui

pytest.importorskip("transformers")
pytestmark = [pytest.mark.slow, pytest.mark.models]


@pytest.mark.parametrize("model_type", ["llama", "bert"])
def test_a_config_naming_a_layer_the_files_lack_is_refused(tmp_path: Path, model_type: str) -> None:
    from tests.sources.tiny_models import SMALL, tiny

    folder = tiny(tmp_path, model_type, SMALL)
    assert attn_tui("stages", "--model", str(folder), "--text", "the cat sat").code == 0  # whole, it opens
    config = json.loads((folder / "config.json").read_text())
    config["num_hidden_layers"] += 1  # one layer more than model.safetensors holds
    (folder / "config.json").write_text(json.dumps(config))
    outcome = attn_tui("stages", "--model", str(folder), "--text", "the cat sat")
    assert outcome.refused("weights its files lack, first '"), outcome
    assert ".2." in outcome.err  # the first missing weight is in the layer the files lack
