"""Export writes each layer's geometry and the step axis, so the weights can be redone from the file alone."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

from attn_tui.attention.engine import compute
from attn_tui.io.export import export, read_geometry, select_stages
from attn_tui.trace.stage import Trace
from tests.attention.test_variant_geometry import _rotate_half
from tests.conftest import sentence

TEXT = "one two three four five six"


def _weights_from_file(doc: dict, head: int) -> torch.Tensor:
    """softmax of the exported q and k through the exported geometry, float64, for one head: (L, S)."""
    geometry = read_geometry(doc["geometry"])[0].of_head(head)
    stages = {(s["name"], s["head"]): torch.tensor(s["data"], dtype=torch.float64) for s in doc["stages"]
              if s["name"] in ("query", "key")}
    q, k = stages["query", head], stages["key", head]
    if geometry.positional.kind == "rotary":
        q, k = _rotate_half(q, geometry.positional.base), _rotate_half(k, geometry.positional.base)
    scores = q @ k.T * geometry.scale
    i, j = torch.arange(q.shape[0])[:, None], torch.arange(k.shape[0])[None, :]
    if geometry.positional.kind == "alibi":
        scores = scores - geometry.heads[0].slope * (i - j).abs()
    scores = scores / geometry.temperature
    allowed = torch.ones_like(scores, dtype=torch.bool)
    if geometry.mask in ("causal", "sliding"):
        allowed &= j <= i
    if geometry.window is not None:
        allowed &= j > i - geometry.window
    return scores.masked_fill(~allowed, -torch.inf).softmax(-1)


def _json(trace: Trace, path: Path) -> dict:
    export(trace, list(trace), "json", path)
    return json.loads(path.read_text(encoding="utf-8"))


def test_json_geometry_round_trips_and_redoes_the_weights(tmp_path: Path) -> None:
    trace = compute(sentence(TEXT, variant="alibi", dim=8, heads=2, mask="sliding", window=3, temperature=0.7))
    doc = _json(trace, tmp_path / "alibi.json")
    assert read_geometry(doc["geometry"]) == trace.geometry
    assert doc["steps"] is None
    exported = {s["head"]: torch.tensor(s["data"], dtype=torch.float64) for s in doc["stages"]
                if s["name"] == "weights"}
    for head in range(2):
        torch.testing.assert_close(_weights_from_file(doc, head), exported[head], atol=1e-6, rtol=1e-5)


def test_rotary_geometry_round_trips(tmp_path: Path) -> None:
    trace = compute(sentence(TEXT, variant="rope", dim=8, rope_base=321.0, mask="causal"))
    doc = _json(trace, tmp_path / "rope.json")
    geometry = read_geometry(doc["geometry"])[0]
    assert geometry == trace.geometry[0] and geometry.positional.base == 321.0 and geometry.mask == "causal"
    doc["stages"] = [dict(s, head=0) for s in doc["stages"]]  # one head: its places carry no head
    weights = next(torch.tensor(s["data"], dtype=torch.float64) for s in doc["stages"] if s["name"] == "weights")
    torch.testing.assert_close(_weights_from_file(doc, 0), weights, atol=1e-6, rtol=1e-5)


def test_the_step_axis_is_exported_in_json_and_the_npz_holds_only_stages(tmp_path: Path) -> None:
    trace = compute(sentence(TEXT, variant="flash", dim=8, tile=4))
    doc = _json(trace, tmp_path / "flash.json")
    assert doc["steps"]["kind"] == "tile"
    assert doc["steps"]["names"] == ["tile 0", "tile 1"]
    assert doc["steps"]["labels"] == ["tile 0 (keys 0–3)", "tile 1 (keys 4–5)"]
    assert doc["steps"]["new_keys"] == [["one", "two", "three", "four"], ["five", "six"]]
    path = export(trace, select_stages(trace, "output"), "npz", tmp_path / "flash.npz")
    with np.load(path) as archive:  # the .npz holds the stages and nothing else; the header is the JSON's
        assert list(archive.keys()) == ["output"] and archive["output"].shape == (6, 8)
