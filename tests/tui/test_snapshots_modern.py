"""Snapshots of the key stage of each of today's variants (reviewed by eye before being accepted)."""

from __future__ import annotations

import pytest

from tests.tui.helpers import sample_app, settle

pytestmark = pytest.mark.slow


def _at(name: str, step: int | None = None, *extra_keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        places = pilot.app.explorer.places
        pilot.app.explorer.go_to_place(next(n for n, p in enumerate(places) if (p.name, p.step) == (name, step)))
        if extra_keys:
            await pilot.press(*extra_keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("sample,stage,step,keys", [
    ("rope_korean", "query_rot", None, ("down", "down", "shift+right")),
    ("gqa_korean", "weights", None, ("]", "g")),
    ("alibi_english", "bias", None, ()),
    ("sink_sliding_korean", "masked", None, ()),
    ("sink_sliding_korean", "sink_mass", None, ()),
    ("flash_tiles", "running_max", 1, ()),
    ("flash_tiles", "accumulator", 2, ()),
])
def test_key_stage(snap_compare, sample: str, stage: str, step: int | None, keys: tuple[str, ...]) -> None:
    assert snap_compare(sample_app(sample), terminal_size=(100, 32), run_before=_at(stage, step, *keys))
