"""An export the app is writing when a signal ends it: what end_on_signal does to it leaves the old file whole and no
partial file, while the worker thread is still writing (its rename then fails and says so)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from attn_tui.io import export as exporting
from attn_tui.io.files import remove_partials
from attn_tui.tui.screens.export import ExportAsk
from tests.limits import limit
from tests.tui.helpers import sample_app, settle, until

pytestmark = [pytest.mark.slow, pytest.mark.app]


async def test_an_export_cut_short_by_a_signal_leaves_the_old_file(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    target = folder / "weights.json"
    target.write_text("the previous export\n")
    writing, release = threading.Event(), threading.Event()
    real = exporting.write_trace_json

    def slow(trace, out, stages=None, params=None) -> None:
        out.write('{"half": ')
        out.flush()
        writing.set()
        release.wait(limit(30))  # the signal arrives here, halfway through
        real(trace, out, stages, params)

    monkeypatch.setattr(exporting, "write_trace_json", slow)
    app = sample_app()
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot)
        app.exporting.export(ExportAsk("stage", "json", target))
        await until(pilot, writing.is_set)  # the worker starts from the event loop: wait without blocking it
        removed = remove_partials()  # what end_on_signal does before the app exits
        assert len(removed) == 1 and removed[0].parent == folder and not removed[0].exists()
        release.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert target.read_text() == "the previous export\n"
    assert sorted(p.name for p in folder.iterdir()) == ["weights.json"]
    assert [n.title for n in app.notices if n.severity == "error"] == ["export failed"]
