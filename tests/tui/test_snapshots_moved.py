"""Snapshot of a real model's `moved` stage (‖A[i,j] · v_j·W_O,hᵀ‖) with the inspector recomputing its cell, in
English and in Korean."""

from __future__ import annotations

import importlib.util

import pytest

from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs attn-tui[models]")
@pytest.mark.parametrize("keys", [(), ("t",)], ids=["english", "korean"])
def test_minilm_moved_stage_and_its_cell(snap_compare, keys: tuple[str, ...]) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("moved"))
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    assert snap_compare(model_app("minilm", "the cat sat on the mat", layer=2, head=5), terminal_size=(120, 40),
                        run_before=run_before)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs attn-tui[models]")
@pytest.mark.parametrize("keys", [(), ("t",)], ids=["english", "korean"])
def test_minilm_value_weighted_rollout(snap_compare, keys: tuple[str, ...]) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("r", "r", *keys)
        await pilot.pause()

    assert snap_compare(model_app("minilm", "the cat sat on the mat"), terminal_size=(120, 40), run_before=run_before)
