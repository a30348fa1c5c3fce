"""Snapshot of multi-head latent attention's key stage: the cache a token costs (reviewed by eye before accepted)."""

from __future__ import annotations

import pytest

from tests.tui.helpers import sample_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.app]


async def _at_cache(pilot) -> None:
    await settle(pilot)
    pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("latent_cache"))
    await pilot.pause()


def test_the_latent_cache_against_multi_head_attention(snap_compare) -> None:
    assert snap_compare(sample_app("mla_korean"), terminal_size=(100, 32), run_before=_at_cache)
