"""Snapshots of the head atlas (reviewed by eye before being accepted) on an 80 × 24 terminal: minilm's atlas, the
same filtered by the sink role, ranked by induction, smollm2's 30 × 9 heads, and two model folders side by side.

The folders are opened by relative names from a fixed working folder, so the screen is the same every run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.tui.helpers import model_app, settle

pytestmark = [pytest.mark.slow, pytest.mark.models]

SIZE = (80, 24)
TEXT = "the cat sat on the mat because the cat was tired"


def _atlas(*keys: str):
    async def run_before(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("a")
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_the_atlas_of_minilm(snap_compare) -> None:
    pytest.importorskip("transformers")
    assert snap_compare(model_app("minilm", TEXT, layer=1, head=3), terminal_size=SIZE, run_before=_atlas())


def test_the_atlas_filtered_by_the_sink_role(snap_compare) -> None:
    pytest.importorskip("transformers")
    assert snap_compare(model_app("minilm", TEXT), terminal_size=SIZE, run_before=_atlas("f", "f", "f", "f"))


def test_the_heads_ranked_by_induction(snap_compare) -> None:
    pytest.importorskip("transformers")
    assert snap_compare(model_app("minilm", TEXT), terminal_size=SIZE, run_before=_atlas("f", "f", "f", "o", "down"))


def test_the_heads_ranked_by_what_they_moved(snap_compare) -> None:
    pytest.importorskip("transformers")
    assert snap_compare(model_app("minilm", TEXT), terminal_size=SIZE, run_before=_atlas("o", "o"))


def test_the_atlas_on_the_induction_probe(snap_compare) -> None:
    pytest.importorskip("transformers")

    async def run_before(pilot: Any) -> None:
        await _atlas("p")(pilot)
        await settle(pilot)
        await pilot.app.workers.wait_for_complete()
        await pilot.pause()

    assert snap_compare(model_app("minilm", TEXT, probe_length=8), terminal_size=SIZE, run_before=run_before)


def test_the_atlas_of_smollm2_fits_80_by_24(snap_compare) -> None:
    pytest.importorskip("transformers")
    assert snap_compare(model_app("smollm2", TEXT, layer=14, head=4), terminal_size=SIZE, run_before=_atlas())


@pytest.fixture
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    pytest.importorskip("transformers")
    from tests.sources.test_families import CONFIGS
    from tests.sources.tiny_models import tiny

    (tmp_path / "models").mkdir()
    tiny(tmp_path / "models", "llama", CONFIGS["llama"], name="llama-tiny")
    tiny(tmp_path / "models", "bert", CONFIGS["bert"], name="bert-tiny")
    monkeypatch.chdir(tmp_path)
    return "models/llama-tiny", "models/bert-tiny"


def test_two_models_atlases_side_by_side(snap_compare, folders: tuple[str, str]) -> None:
    from textual.widgets import OptionList

    a, b = folders

    async def run_before(pilot: Any) -> None:
        app = pilot.app
        await settle(pilot)
        app.editing.choose_model(a)
        await settle(pilot)
        await _atlas()(pilot)
        screen = app.screen
        await pilot.press("c")
        await pilot.pause()
        chooser = app.screen
        chooser.query_one(OptionList).highlighted = next(n for n, (_label, c) in enumerate(chooser.options)
                                                         if c.key == "other")
        await pilot.press("enter")
        for _ in range(100):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if screen.atlases.get("b") is not None:
                break
        await pilot.press("down", "right")
        await pilot.pause()

    assert snap_compare(model_app(b, "the cat sat on the mat and the cat"), terminal_size=SIZE, run_before=run_before)
