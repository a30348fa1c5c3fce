"""Snapshots of linear attention's key stages: the state after a few tokens, and the implied matrix (reviewed by eye
before being accepted)."""

from __future__ import annotations

import pytest

from tests.tui.helpers import sample_app
from tests.tui.test_snapshots_modern import _at

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("sample,stage,step", [
    ("linear_state_korean", "state", 3),
    ("linear_implied", "implied", None),
])
def test_key_stage(snap_compare, sample: str, stage: str, step: int | None) -> None:
    assert snap_compare(sample_app(sample), terminal_size=(100, 32), run_before=_at(stage, step))
