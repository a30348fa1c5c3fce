"""A real model folder made hostile: a config.json whose sizes disagree with the tensors, a weights file cut in
half, a shard index naming a missing shard or a path out of the folder, a .bin holding pickled objects beside the
real tensors. Each is one line and exit 2 from the command line, in bounded time and memory, and runs nothing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.hostile.helpers import attn_tui

pytestmark = [pytest.mark.slow, pytest.mark.models]
transformers = pytest.importorskip("transformers")

from tests.sources.tiny_models import SMALL, tiny  # noqa: E402

TOKENS = dict(pad_token_id=0, bos_token_id=101, eos_token_id=102)
CONFIGS: dict[str, dict[str, Any]] = {
    "phi3": dict(SMALL, **TOKENS, num_key_value_heads=2),
    "gpt_neox": dict(SMALL, **TOKENS, rotary_pct=0.5),
    "olmo2": dict(SMALL, **TOKENS, num_key_value_heads=2),
}


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("made")
    return {model_type: tiny(root, model_type, config) for model_type, config in CONFIGS.items()}


def _copy(made: dict[str, Path], model_type: str, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made[model_type], tmp_path / model_type))


def _stages(path: Path) -> Any:
    return attn_tui("stages", "--model", str(path), "--text", "a b")


@pytest.mark.parametrize(("model_type", "change", "fragment"), [
    ("phi3", {"hidden_size": 64}, "'model.embed_tokens.weight' is 30522 × 32; its sizes (vocab × width) make it "
                                  "30522 × 64"),
    ("phi3", {"num_attention_heads": 8}, "'model.layers.0.self_attn.qkv_proj.weight' is 64 × 32"),
    ("olmo2", {"num_key_value_heads": 4}, "'model.layers.0.self_attn.k_proj.weight' is 16 × 32; its sizes (kv heads × "
                                          "head_dim, width) make it 32 × 32"),
    ("gpt_neox", {"hidden_size": 48}, "'gpt_neox.embed_in.weight' is 30522 × 32"),
    ("olmo2", {"num_hidden_layers": 3}, "config.json says 3 layers; its weights hold 2"),  # else drawn at random
    ("gpt_neox", {"num_hidden_layers": 1}, "config.json says 1 layers; its weights hold 2"),
])
def test_a_config_whose_sizes_disagree_with_the_weights_is_one_line(made: dict[str, Path], tmp_path: Path,
                                                                    model_type: str, change: dict[str, int],
                                                                    fragment: str) -> None:
    path = _copy(made, model_type, tmp_path)
    config = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**config, **change}))
    outcome = _stages(path)
    assert outcome.refused(fragment), outcome


@pytest.mark.parametrize("model_type", sorted(CONFIGS))
def test_a_weights_file_cut_in_half_is_one_line(made: dict[str, Path], tmp_path: Path, model_type: str) -> None:
    path = _copy(made, model_type, tmp_path)
    data = (path / "model.safetensors").read_bytes()
    (path / "model.safetensors").write_bytes(data[:len(data) // 2])
    outcome = _stages(path)
    assert outcome.refused("'model.safetensors' is cut short: its header describes"), outcome
    (path / "model.safetensors").write_bytes(data[:12])  # inside the header itself
    assert _stages(path).refused("'model.safetensors' is cut short: its header alone needs")


def test_a_header_no_model_has_is_refused_before_it_is_parsed(made: dict[str, Path], tmp_path: Path) -> None:
    """A header of a million entries parses for minutes into a gigabyte: past what any checkpoint's header holds,
    it is refused from its length alone."""
    import struct

    path = _copy(made, sorted(made)[0], tmp_path)
    length = 20 * 1024**2
    with open(path / "model.safetensors", "wb") as handle:  # sparse: its length says 20 MB, the disk holds 8 bytes
        handle.write(struct.pack("<Q", length))
        handle.truncate(8 + length + 1024)
    outcome = _stages(path)  # in a child under the hostile helpers' memory ceiling and time limit
    assert outcome.refused("'model.safetensors' has a header of 20.0 MB; a model's is at most 16.0 MB"), outcome


def _sharded(made: dict[str, Path], tmp_path: Path, shard_names: tuple[str, str]) -> tuple[Path, list[str]]:
    """The olmo2 folder as two shards and an index; only the first shard is written."""
    from safetensors.torch import load_file, save_file

    path = _copy(made, "olmo2", tmp_path)
    tensors = load_file(path / "model.safetensors")
    (path / "model.safetensors").unlink()
    names = sorted(tensors)
    half = len(names) // 2
    save_file({n: tensors[n] for n in names[:half]}, path / shard_names[0], metadata={"format": "pt"})
    index = {"metadata": {}, "weight_map": {n: shard_names[0] if i < half else shard_names[1]
                                             for i, n in enumerate(names)}}
    (path / "model.safetensors.index.json").write_text(json.dumps(index))
    return path, names


def test_a_shard_index_naming_a_missing_shard_is_one_line(made: dict[str, Path], tmp_path: Path) -> None:
    path, _ = _sharded(made, tmp_path, ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"))
    outcome = _stages(path)
    assert outcome.refused("names the shard 'model-00002-of-00002.safetensors', which is missing"), outcome


def test_a_shard_index_naming_a_path_out_of_the_folder_is_one_line(made: dict[str, Path], tmp_path: Path) -> None:
    outside = tmp_path / "outside.safetensors"
    outside.write_bytes(b"")
    path, _ = _sharded(made, tmp_path, ("model-00001-of-00002.safetensors", "../outside.safetensors"))
    outcome = _stages(path)
    assert outcome.refused("names the shard '../outside.safetensors', which is not a file of the folder"), outcome


def test_a_shard_index_that_is_not_an_index_is_one_line(made: dict[str, Path], tmp_path: Path) -> None:
    path, _ = _sharded(made, tmp_path, ("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"))
    for text, fragment in (("{not json", "is not readable JSON"), ('{"weight_map": [1]}', "has no weight_map")):
        (path / "model.safetensors.index.json").write_text(text)
        outcome = _stages(path)
        assert outcome.refused(fragment), outcome


class _Marker:
    """Unpickling this would run `open(marker, 'w')`: weights_only loading must refuse it."""

    def __init__(self, path: Path) -> None:
        self.path = str(path)

    def __reduce__(self) -> tuple[Any, tuple[str, str]]:
        return (open, (self.path, "w"))


def test_a_bin_holding_pickled_objects_beside_real_tensors_is_refused_and_runs_nothing(made: dict[str, Path],
                                                                                       tmp_path: Path) -> None:
    import torch
    from safetensors.torch import load_file

    path = _copy(made, "olmo2", tmp_path)
    marker = tmp_path / "marker"
    state = load_file(path / "model.safetensors")
    (path / "model.safetensors").unlink()
    torch.save({**state, "extra": _Marker(marker)}, path / "pytorch_model.bin")
    outcome = _stages(path)
    assert outcome.refused("holds pickled objects, not only tensors"), outcome
    assert not marker.exists()


def test_a_layer_missing_a_tensor_the_others_hold_is_one_line(made: dict[str, Path], tmp_path: Path) -> None:
    """transformers would draw the missing key projection at random and trace it as the model's."""
    from safetensors.torch import load_file, save_file

    path = _copy(made, "olmo2", tmp_path)
    tensors = load_file(path / "model.safetensors")
    del tensors["model.layers.1.self_attn.k_proj.weight"]
    save_file(tensors, path / "model.safetensors", metadata={"format": "pt"})
    outcome = _stages(path)
    assert outcome.refused("layer 1 of the weights lacks 'self_attn.k_proj.weight', which layer 0 has"), outcome
