"""`attn-tui heads` on model folders: which layers are local, and their window, in the table and in the JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("transformers")

from attn_tui.cli import main
from tests.sources.test_families import CONFIGS
from tests.sources.tiny_models import TEXT, tiny

pytestmark = [pytest.mark.slow, pytest.mark.models]


def test_a_model_whose_layers_alternate_says_which_are_local(tmp_path: Path, capsys) -> None:
    folder = str(tiny(tmp_path, "gemma3_text", CONFIGS["gemma3_text"]))
    assert main(["heads", "--model", folder, "--text", TEXT, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["windows"] == [3, None, 3, None]  # as its layer_types say
    assert main(["heads", "--model", folder, "--text", TEXT]) == 0
    assert "local layers 0, 2 (sliding window 3) · global layers 1, 3" in capsys.readouterr().out


def test_a_model_without_local_layers_says_nothing_of_them(tmp_path: Path, capsys) -> None:
    folder = str(tiny(tmp_path, "llama", CONFIGS["llama"]))
    assert main(["heads", "--model", folder, "--text", TEXT, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["windows"] == [None, None]
    assert main(["heads", "--model", folder, "--text", TEXT]) == 0
    assert "local layers" not in capsys.readouterr().out
