"""Snapshots of a recorded flex_attention call: the block map as a tile map, and a score_mod cell in the inspector."""

from __future__ import annotations

import warnings

import pytest
import torch

import attn_tui
from attn_tui.ask.settings import RecordAsk
from tests.tui.helpers import RecordingApp, settle

flex = pytest.importorskip("torch.nn.attention.flex_attention")
pytestmark = pytest.mark.slow

WORDS = ["the", "cat", "sat", "on", "the", "mat", "and", "then", "it", "ran", "off", "home"]  # three tiles of 4


def relative_bias(score, b, h, q_idx, kv_idx):
    return score - 0.25 * (q_idx - kv_idx).abs()


def prefix_lm(b, h, q_idx, kv_idx):
    return (kv_idx < 3) | (q_idx >= kv_idx)


def flex_trace():
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 2, len(WORDS), 8, generator=g) for _ in range(3))
    block_mask = flex.create_block_mask(prefix_lm, None, None, len(WORDS), len(WORDS), device="cpu", BLOCK_SIZE=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with attn_tui.record(tokens=WORDS) as rec:
            flex.flex_attention(q, k, v, score_mod=relative_bias, block_mask=block_mask)
    return rec.trace


def _at(stage: str, *keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index(stage))
        await pilot.press(*keys)
        await settle(pilot)

    return run_before


def test_the_block_map_of_a_flex_call(snap_compare) -> None:
    assert snap_compare(RecordingApp(record=RecordAsk().keeping(flex_trace())), terminal_size=(120, 36),
                        run_before=_at("block_map", "shift+right", "shift+right"))


def test_a_score_mod_cell_in_the_inspector(snap_compare) -> None:
    assert snap_compare(RecordingApp(record=RecordAsk().keeping(flex_trace())), terminal_size=(120, 36),
                        run_before=_at("score_mod", "shift+down", "shift+down", "shift+right"))
