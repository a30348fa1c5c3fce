"""The JSON export carries each recorded call's mask as the inspector tells it: causal, sliding window and its
size, padding keys, a flex mask_mod, or the matrix as the code gave it (issue 26)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui import i18n
from attn_tui.ask.budget import JSON_BYTES_PER_NUMBER
from attn_tui.attention.engine import compute
from attn_tui.io.export import output_size, trace_to_json
from attn_tui.io.mask_json import stage_mask
from attn_tui.trace.stage import Trace
from tests.cli.test_cli import run_cli
from tests.conftest import sentence

HEADER = ("kind", "device", "dtype", "tokens", "mask_convention", "mask", "warnings", "geometry", "steps", "inputs",
          "params", "stages")


def _qkv(seed: int, length: int = 6, heads: int = 2) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(seed)
    return tuple(torch.randn(1, heads, length, 4) for _ in range(3))


def _recorded(allowed: torch.Tensor, seed: int = 0) -> tuple[Trace, dict]:
    q, k, v = _qkv(seed, allowed.shape[-1])
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, k, v, attn_mask=allowed)
    return rec.trace, json.loads(trace_to_json(rec.trace))


def _masked(doc: dict) -> list[dict]:
    return [s for s in doc["stages"] if s["name"] == "masked"]


def _sliding_padded(length: int = 6, window: int = 3, pad: int = 2) -> torch.Tensor:
    rows, cols = torch.arange(length)[:, None], torch.arange(length)[None, :]
    return (cols <= rows) & (cols > rows - window) & (cols < length - pad)  # (L, S)


def test_a_sliding_window_with_padding_keys_is_told_by_its_parts_and_matches_the_data() -> None:
    allowed = _sliding_padded()
    trace, doc = _recorded(allowed)
    assert all(key in doc for key in HEADER) and doc["mask"] is None  # the header as it was
    masked = _masked(doc)
    assert len(masked) == 2  # one per head
    for stage in masked:
        mask = stage["mask"]
        assert mask["reasons"] == ["causal", "sliding_window", "padding"]
        assert mask["causal"] is True and mask["window"] == 3 and mask["padding_keys"] == [4, 5]
        assert mask["described"] == "sliding window 3 + padding" and mask["code_rule"] == "sdpa_bool"
        assert mask["allowed"] == allowed.to(torch.int64).tolist()
        data = torch.tensor([[float(x) for x in row] for row in stage["data"]])  # "-inf" strings read as floats
        assert torch.equal(torch.isneginf(data), ~allowed)  # the mask said is the mask the data was filled by
    spec = trace.stage("masked", head=0).op.mask
    assert [str(r) for r in spec.reasons(5, 1)] == [  # the inspector's own words for a cell both rules hide
        "sliding window: key 1 is 4 positions before query 5, outside the window of 3 (query i sees keys "
        "i − 3 < j ≤ i)"]
    assert not any("mask" in s for s in doc["stages"] if s["name"] != "masked")


def test_a_mask_no_rule_explains_is_as_the_code_gave_it() -> None:
    allowed = torch.ones(5, 5, dtype=torch.bool).tril()
    allowed[3, 1] = False  # one cell no causal, window or padding rule explains
    _, doc = _recorded(allowed, seed=1)
    for stage in _masked(doc):
        mask = stage["mask"]
        assert mask["reasons"] == ["as_given"] and mask["described"] == "as the code gave it"
        assert mask["causal"] is False and mask["window"] is None and mask["padding_keys"] is None
        assert mask["allowed"] == allowed.to(torch.int64).tolist()


def test_is_causal_is_told_causal_and_its_words_in_korean() -> None:
    q, k, v = _qkv(2, 4)
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    mask = _masked(json.loads(trace_to_json(rec.trace)))[0]["mask"]
    assert mask["reasons"] == ["causal"] and mask["window"] is None and mask["described"] == "causal"
    assert mask["allowed"] == torch.ones(4, 4, dtype=torch.int64).tril().tolist()
    previous = i18n.language()
    i18n.set_language("ko")
    try:
        korean = _masked(json.loads(trace_to_json(rec.trace)))[0]["mask"]
    finally:
        i18n.set_language(previous)
    assert korean["reasons"] == ["causal"] and korean["described"] == "인과(causal)"  # names stay, words translate


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:flex_attention called without torch.compile")
def test_a_flex_mask_mod_is_named() -> None:
    flex = pytest.importorskip("torch.nn.attention.flex_attention")

    def local(b, h, q_idx, kv_idx):
        return (q_idx >= kv_idx) & (q_idx - kv_idx < 2)

    q, k, v = _qkv(3, 8)
    block_mask = flex.create_block_mask(local, None, None, 8, 8, device="cpu", BLOCK_SIZE=8)
    with attn_tui.record() as rec:
        flex.flex_attention(q, k, v, block_mask=block_mask)
    masked = [s for s in json.loads(trace_to_json(rec.trace))["stages"] if "mask" in s]
    assert masked
    rows, cols = torch.arange(8)[:, None], torch.arange(8)[None, :]
    for stage in masked:
        mask = stage["mask"]
        assert mask["mask_mod"] is not None and "local" in mask["mask_mod"]
        assert mask["reasons"] == ["mask_mod"] and mask["described"] == f"mask_mod {mask['mask_mod']}"
        assert mask["allowed"] == ((rows >= cols) & (rows - cols < 2)).to(torch.int64).tolist()


def test_a_variant_keeps_its_one_mask_in_the_header() -> None:
    trace = compute(sentence("one two three four", dim=8, heads=2, mask="causal"))
    doc = json.loads(trace_to_json(trace))
    assert doc["mask"] == torch.ones(4, 4, dtype=torch.int64).tril().tolist()
    assert not any("mask" in s for s in doc["stages"])


@pytest.mark.slow  # a child process that imports torch: seconds
def test_trace_format_json_carries_the_masks_of_the_file_it_ran(capsys, tmp_path: Path) -> None:
    script = tmp_path / "windowed.py"
    script.write_text(textwrap.dedent('''
        import torch
        import torch.nn.functional as F

        torch.manual_seed(0)
        q, k, v = (torch.randn(2, 1, 6, 4) for _ in range(3))
        rows, cols = torch.arange(6)[:, None], torch.arange(6)[None, :]
        window = (cols <= rows) & (cols > rows - 3)
        keys = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])  # the second item's last two keys: padding
        F.scaled_dot_product_attention(q, k, v, attn_mask=window & keys[:, None, None, :])
    '''), encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(script))
    assert code == 0, err
    masks = {s["step"]: s["mask"] for s in json.loads(out)["stages"] if s["name"] == "masked"}
    assert masks[0]["reasons"] == ["causal", "sliding_window"] and masks[0]["window"] == 3
    assert masks[1]["reasons"] == ["causal", "sliding_window", "padding"] and masks[1]["padding_keys"] == [4, 5]
    assert masks[1]["described"] == "sliding window 3 + padding"


def test_a_long_calls_mask_stays_its_parts() -> None:
    """Past the size held whole, the stage is computed by tiles: its mask is said by its parts, no matrix."""
    q, k, v = (torch.randn(1, 8, 1024, 16) for _ in range(3))  # 8M scores: lazy
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, k, v, is_causal=True)
    trace = rec.trace
    stage = trace.stage("masked", head=3)
    assert stage.lazy
    mask = stage_mask(trace, stage)
    assert mask is not None and "allowed" not in mask
    assert mask["reasons"] == ["causal"] and mask["shape"] == [1024, 1024] and mask["padding_keys"] is None


def test_the_size_checked_before_writing_counts_the_masks() -> None:
    allowed = _sliding_padded()
    trace, _ = _recorded(allowed, seed=4)
    stages = list(trace)
    masked = [s for s in stages if s.name == "masked"]
    assert output_size(trace, stages, "json") - output_size(trace, [s for s in stages if s not in masked], "json") \
        == len(masked) * 2 * 36 * JSON_BYTES_PER_NUMBER  # each masked stage: its 36 values and its 36 mask cells
