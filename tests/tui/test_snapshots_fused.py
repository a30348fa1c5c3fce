"""Snapshot of an OLMo-2 folder in the app (reviewed by eye before being accepted): its q norm, one RMSNorm over
the whole projection, with the inspector showing a cell's RMS over every head's dimensions and the weight.

The folder is opened by a relative name from a fixed working folder, so the screen is the same every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]


@pytest.fixture
def olmo2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    pytest.importorskip("transformers")
    from tests.sources.test_families_fused import CONFIGS
    from tests.sources.tiny_models import tiny

    (tmp_path / "models").mkdir()
    tiny(tmp_path / "models", "olmo2", CONFIGS["olmo2"], name="olmo2-tiny")
    monkeypatch.chdir(tmp_path)
    return "models/olmo2-tiny"


def test_olmo2s_query_norm_over_the_whole_projection(snap_compare, olmo2: str) -> None:
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("query_norm"))
        await pilot.press("down", "down", "shift+right")
        await pilot.pause()

    assert snap_compare(model_app(olmo2, "the cat sat on the mat", layer=0, head=2), terminal_size=(110, 36),
                        run_before=run_before)
