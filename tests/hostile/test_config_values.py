"""A config.json value no model can mean (a rotary base of 0, a negative epsilon, a rank of 0, heads that do not
divide) is refused before loading, in one line that names the key and the value: never a dependency's message, never
a trace of NaN. The sweep covers every family's tiny config and every check the families declare."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

transformers = pytest.importorskip("transformers")

from attn_tui.sources import folder  # noqa: E402
from attn_tui.sources.families import family_for  # noqa: E402
from attn_tui.sources.families.spec import NONE_IS_ZERO, SHARED_CHECKS, Divides, KeyPattern  # noqa: E402
from tests.hostile.helpers import attn_tui  # noqa: E402
from tests.sources.tiny_models import CONFIGS, TEXT, tiny, tokenizer_files  # noqa: E402

pytestmark = pytest.mark.slow
WRONG = {"a number above 0": (0, -1.5, math.nan, math.inf), "a fraction above 0 and at most 1": (0, 2, -0.5, math.nan),
         "a whole number, at least 1": (0, -2, 1.5, math.nan), "a probability, from 0 to 1": (-0.5, 1.5, math.nan),
         "a whole number, 0 or more": (-1, 0.5, math.nan)}


def _folder(tmp_path: Path, model_type: str) -> tuple[Path, dict[str, Any]]:
    """A folder with the family's config.json (as transformers saves it) and a tokenizer; no weights."""
    path = tmp_path / model_type
    transformers.AutoConfig.for_model(model_type, **CONFIGS[model_type]).save_pretrained(path)
    tokenizer_files(path)
    return path, json.loads((path / "config.json").read_text(encoding="utf-8"))


def _set(config: dict[str, Any], key: str, value: object) -> dict[str, Any]:
    changed = json.loads(json.dumps(config))
    *outer, last = key.split(".")
    place = changed
    for part in outer:
        if not isinstance(place.get(part), dict):
            place[part] = {}
        place = place[part]
    place[last] = value
    return changed


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_declared_check_refuses_its_key_in_one_line(tmp_path: Path, model_type: str) -> None:
    path, config = _folder(tmp_path, model_type)
    assert folder.check_folder(path) == model_type  # the family's own config passes
    family = family_for(model_type)
    assert family is not None
    swept = 0
    for check in (*SHARED_CHECKS, *family.checks):
        if isinstance(check, Divides):
            continue
        for key in check.keys_in(config) if isinstance(check, KeyPattern) else check.keys[:1]:
            for value in WRONG[check.means]:
                (path / "config.json").write_text(json.dumps(_set(config, key, value)), encoding="utf-8")
                with pytest.raises(folder.ModelError) as refused:
                    folder.check_folder(path)
                said = str(refused.value)
                assert f"has {key} {value}" in said and check.means in said, said
                swept += 1
    (path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    assert swept >= 20


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_every_number_in_every_familys_config_out_of_range_is_refused_naming_its_key(tmp_path: Path,
                                                                                  model_type: str) -> None:
    """Each number config.json holds, set to 0 or -1 (-1 alone where 0 means "none"), under a model with weights:
    it loads and traces with no NaN, or its refusal names the key; never a dependency's message, never a refusal
    that leaves the user to guess which value is wrong."""
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.errors import AttnError
    from attn_tui.sources import run

    path = tiny(tmp_path, model_type, CONFIGS[model_type])
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    numbers = [key for key, value in config.items() if isinstance(value, (int, float)) and not isinstance(value, bool)]
    unclear = []
    for key in numbers:
        for value in (-1,) if key in NONE_IS_ZERO else (0, -1):
            if config[key] == value:
                continue
            (path / "config.json").write_text(json.dumps(dict(config, **{key: value})), encoding="utf-8")
            try:
                trace = run(ModelAsk(str(path), TEXT)).trace  # the folder changed: loaded afresh, not from the cache
            except AttnError as refused:
                if key not in str(refused):
                    unclear.append(f"{key}={value}: {refused}")
                continue
            except Exception as raw:  # the command line would print "could not compute" and the dependency's words
                unclear.append(f"{key}={value}: {type(raw).__name__}: {raw}")
                continue
            nan = [stage.key for stage in trace if not stage.lazy and bool(stage.tensor.isnan().any())]
            if nan and not any("NaN" in str(warning) or "finite" in str(warning) for warning in trace.warnings):
                unclear.append(f"{key}={value}: silent NaN in {nan[0]}")
    assert len(numbers) >= 12 and not unclear, "\n".join(unclear)


@pytest.mark.parametrize(("model_type", "part", "whole", "values"), [
    ("llama", "num_key_value_heads", "num_attention_heads", (3, 4)),
    ("qwen3_next", "linear_num_key_heads", "linear_num_value_heads", (3, 4)),
])
def test_head_counts_that_do_not_divide_are_refused(tmp_path: Path, model_type: str, part: str, whole: str,
                                                    values: tuple[int, int]) -> None:
    path, config = _folder(tmp_path, model_type)
    (path / "config.json").write_text(json.dumps(config | {part: values[0], whole: values[1]}), encoding="utf-8")
    with pytest.raises(folder.ModelError, match=f"{part} 3 and {whole} 4: {part} must divide {whole}"):
        folder.check_folder(path)


@pytest.mark.parametrize(("key", "value"), [("rope_theta", 0), ("rms_norm_eps", -1e-6), ("rope_theta", "NaN")])
def test_the_command_line_refuses_a_model_that_would_compute_nan_in_one_line(tmp_path: Path, key: str,
                                                                            value: object) -> None:
    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    text = json.dumps(_set(config, key, value)).replace('"NaN"', "NaN")  # JSON as Python writes a float NaN
    (path / "config.json").write_text(text, encoding="utf-8")
    outcome = attn_tui("stages", "--model", str(path), "--text", TEXT)
    assert outcome.refused(f"has {key} "), outcome.err


def test_a_weight_that_is_not_finite_is_refused_naming_the_tensor(tmp_path: Path) -> None:
    from safetensors.torch import load_file, save_file

    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    (weights,) = path.glob("*.safetensors")
    tensors = load_file(str(weights))
    key = next(name for name in tensors if name.endswith("layers.1.self_attn.k_proj.weight"))
    tensors[key][0, 0] = math.nan
    save_file(tensors, str(weights), metadata={"format": "pt"})
    outcome = attn_tui("stages", "--model", str(path), "--text", TEXT)
    assert outcome.refused("layers.1.self_attn.k_proj.weight"), outcome.err
    assert "NaN" in outcome.err


def test_a_temperature_that_overflows_the_logits_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tiny(tmp_path, "llama", CONFIGS["llama"])
    outcome = attn_tui("stages", "--model", str(path), "--text", TEXT, "--generate", "2", "--do-sample",
                       "--temperature", "1e-300")
    assert outcome.refused("--temperature 1e-300 is so small"), outcome.err


def test_a_tokenizer_that_knows_more_tokens_than_the_model_is_refused_in_one_line(tmp_path: Path) -> None:
    """A vocabulary of 200 beside a tokenizer of 30,522 tokens: refused, naming both, not "index out of range"."""
    path = tiny(tmp_path, "llama", dict(CONFIGS["llama"], vocab_size=200))
    outcome = attn_tui("stages", "--model", str(path), "--text", TEXT)
    assert outcome.refused("config.json has vocab_size 200"), outcome.err
    writing = attn_tui("stages", "--model", str(path), "--text", TEXT, "--generate", "1")
    assert writing.refused("config.json has vocab_size 200"), writing.err
