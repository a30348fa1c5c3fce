"""A safetensors header read as data (sources/weight_files.py): what transformers would refuse late, or not at all,
is named at once; a well-formed header, even of a dtype newer than the table, passes."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from attn_tui.sources.weight_files import WeightsError, check_shapes, weight_shapes


def _file(path: Path, header: dict, data: bytes) -> Path:
    text = json.dumps(header).encode()
    path.write_bytes(struct.pack("<Q", len(text)) + text + data)
    return path


def _entry(shape: object, offsets: object, dtype: str = "F32") -> dict:
    return {"dtype": dtype, "shape": shape, "data_offsets": offsets}


def test_a_well_formed_header_gives_every_shape(tmp_path: Path) -> None:
    _file(tmp_path / "model.safetensors", {"__metadata__": {"format": "pt"}, "a": _entry([2, 3], [0, 24]),
                                           "b": _entry([4], [24, 28], "F4_NEW")}, bytes(28))
    assert weight_shapes(tmp_path) == {"a": (2, 3), "b": (4,)}


@pytest.mark.parametrize(("entry", "data", "fragment"), [
    (_entry([2, 3], [0, 24]), bytes(10), "is cut short: its header describes 24 bytes of tensors, the file holds 10"),
    (_entry([2.5, 3], [0, 24]), bytes(24), "its header is malformed"),  # a shape of 2.5 rows
    (_entry([-2, 3], [0, 24]), bytes(24), "its header is malformed"),
    (_entry([2, 3], [0, 20]), bytes(24), "its header is malformed"),  # 6 floats in 20 bytes
    (_entry([2, 3], [24, 0]), bytes(24), "its header is malformed"),
    (_entry([2, 3], [0, 24], "F32") | {"shape": "2x3"}, bytes(24), "its header is malformed"),
    ({"dtype": "F32"}, bytes(24), "its header is malformed"),
])
def test_a_malformed_or_short_header_is_named(tmp_path: Path, entry: dict, data: bytes, fragment: str) -> None:
    _file(tmp_path / "model.safetensors", {"w": entry}, data)
    with pytest.raises(WeightsError, match=fragment):
        weight_shapes(tmp_path)


def test_a_header_longer_than_the_file_is_cut_short(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(struct.pack("<Q", 1000) + b"{}")
    with pytest.raises(WeightsError, match="its header alone needs 1008 bytes, the file holds 10"):
        weight_shapes(tmp_path)


def test_no_safetensors_is_none_and_a_model_safetensors_is_read_before_an_index(tmp_path: Path) -> None:
    assert weight_shapes(tmp_path) is None
    (tmp_path / "model.safetensors.index.json").write_text("{not json")
    _file(tmp_path / "model.safetensors", {"a": _entry([1], [0, 4])}, bytes(4))
    assert weight_shapes(tmp_path) == {"a": (1,)}  # transformers' own order: the single file first


SIZES = {"layers": 2, "width": 8, "vocab": 10, "heads": 2, "kv_heads": 1, "head_dim": None}


def test_sizes_that_agree_pass_and_each_disagreement_is_named() -> None:
    shapes = {"model.embed_tokens.weight": (10, 8), "model.layers.0.self_attn.q_proj.weight": (8, 8),
              "model.layers.0.self_attn.k_proj.weight": (4, 8), "model.layers.1.self_attn.q_proj.weight": (8, 8),
              "model.layers.1.self_attn.k_proj.weight": (4, 8)}
    check_shapes(shapes, SIZES)
    with pytest.raises(WeightsError, match="says 3 layers; its weights hold 2"):
        check_shapes(shapes, {**SIZES, "layers": 3})
    with pytest.raises(WeightsError, match=r"'model.layers.0.self_attn.k_proj.weight' is 4 × 8; .* make it 8 × 8"):
        check_shapes(shapes, {**SIZES, "kv_heads": 2})
    with pytest.raises(WeightsError, match=r"'model.embed_tokens.weight' is 10 × 8; .* make it 12 × 8"):
        check_shapes(shapes, {**SIZES, "vocab": 12})
    del shapes["model.layers.1.self_attn.k_proj.weight"]
    with pytest.raises(WeightsError, match="layer 1 of the weights lacks 'self_attn.k_proj.weight'"):
        check_shapes(shapes, SIZES)


def test_every_shard_the_index_names_is_read_and_a_short_one_is_named(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors.index.json").write_text(json.dumps(
        {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}))
    _file(tmp_path / "model-00001-of-00002.safetensors", {"a": _entry([2], [0, 8])}, bytes(8))
    _file(tmp_path / "model-00002-of-00002.safetensors", {"b": _entry([3], [0, 12])}, bytes(12))
    assert weight_shapes(tmp_path) == {"a": (2,), "b": (3,)}
    _file(tmp_path / "model-00002-of-00002.safetensors", {"b": _entry([3], [0, 12])}, bytes(6))
    with pytest.raises(WeightsError, match="'model-00002-of-00002.safetensors' is cut short"):
        weight_shapes(tmp_path)
