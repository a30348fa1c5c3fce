"""The app as `attn-tui serve` runs it for a visitor: exports only into serve's folder, only the shipped models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import Input

from attn_tui.ask.settings import ModelAsk
from attn_tui.errors import InputError
from attn_tui.tui.served import EXPORT_ENV, SERVED_ENV, check_ask, export_folder, inside_export_folder
from tests.tui.helpers import sample_app, settle

SIZE = (100, 32)


@pytest.fixture
def exports(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "exports"
    folder.mkdir()
    monkeypatch.setenv(SERVED_ENV, "1")
    monkeypatch.setenv(EXPORT_ENV, str(folder))
    return folder


def test_outside_serve_paths_are_as_typed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SERVED_ENV, raising=False)
    monkeypatch.setenv(EXPORT_ENV, str(tmp_path))  # read only under serve
    assert export_folder() == Path.cwd()
    assert inside_export_folder(Path("/etc/passwd")) == Path("/etc/passwd")
    check_ask(ModelAsk("/some/folder", "a b"))


def test_served_paths_stay_in_serve_folder(exports: Path, tmp_path: Path) -> None:
    assert export_folder() == exports
    assert inside_export_folder(Path("a.json")) == exports.resolve() / "a.json"
    (exports / "out").symlink_to(tmp_path)  # a link inside that leads outside
    (exports / "sub").mkdir()
    assert inside_export_folder(Path("sub/c.csv")) == exports.resolve() / "sub" / "c.csv"
    for typed in ("out/a.json", ".", ""):  # they read as inside, and lead out (or are the folder itself)
        with pytest.raises(InputError, match="writes only into"):
            inside_export_folder(Path(typed))
    # a path that would not go where it reads is refused as typed: ~ is no home here, .. and / leave the folder
    for typed in ("../a.json", str(tmp_path / "a.json"), "/etc/passwd", "sub/../b.npz", "sub/../..", "~/a.json",
                  "~a.json", os.path.expanduser("~/.bashrc")):
        with pytest.raises(InputError, match=r"no ~, \.\. or /"):
            inside_export_folder(Path(typed))


def test_served_models_are_the_shipped_ones(exports: Path, tmp_path: Path) -> None:
    check_ask(ModelAsk("minilm", "a b"))
    for name in (str(tmp_path), "gpt2", "../models/x", "sshleifer/tiny-gpt2"):
        with pytest.raises(InputError, match="shipped models"):
            check_ask(ModelAsk(name, "a b"))


@pytest.mark.slow
@pytest.mark.app
async def test_served_export_writes_only_into_serve_folder(exports: Path, tmp_path: Path) -> None:
    from attn_tui.tui.screens.export import ExportScreen

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for typed in ("../escaped.json", str(tmp_path / "escaped.json")):
            await pilot.press("e")
            await pilot.pause()
            screen = app.screen
            assert isinstance(screen, ExportScreen)
            offered = screen.query_one("#export-path", Input).value
            assert str(exports) not in offered and "/" not in offered  # a file name: serve's folder stays unsaid
            screen.query_one("#export-path", Input).value = typed
            await pilot.press("enter")
            await pilot.pause()
            assert app.screen is screen and "no ~, .. or /" in str(screen.query_one("#export-error").render())
            assert screen.query_one("#export-path", Input).value == typed  # nothing typed is lost
            await pilot.press("escape")
            await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        app.screen.query_one("#export-path", Input).value = "mine.json"
        await pilot.press("enter")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert (exports / "mine.json").stat().st_size > 0
    assert not (tmp_path / "escaped.json").exists()


@pytest.mark.slow
@pytest.mark.app
async def test_a_served_app_refuses_a_typed_model_folder(exports: Path, tmp_path: Path) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.trace
        app.editing.choose_model(str(tmp_path))
        await settle(pilot)
        assert any("shipped models" in str(n.message) for n in app.notices)
        assert app.trace is before and not isinstance(app.wanted, ModelAsk)  # back on what was shown


@pytest.mark.slow
def test_snapshot_served_export_refuses_a_path_outside(snap_compare, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    folder = tmp_path  # never drawn: a visitor is not told where serve's folder is
    monkeypatch.setenv(SERVED_ENV, "1")
    monkeypatch.setenv(EXPORT_ENV, str(folder))

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        path = pilot.app.screen.query_one("#export-path")
        path.cursor_blink = False
        path.value = "../../etc/x.json"
        path.action_end()
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=run_before)


@pytest.mark.parametrize("served", [False, True])
def test_the_app_never_runs_a_script_it_only_shows_a_recorded_one(served: bool, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A RecordAsk that would run code (no trace held) is refused before any worker could run it, served or not;
    one that holds its trace already (what `attn-tui trace` hands the app) is shown."""
    from attn_tui.ask.settings import RecordAsk

    if served:
        monkeypatch.setenv(SERVED_ENV, "1")
        monkeypatch.setenv(EXPORT_ENV, str(tmp_path))
    else:
        monkeypatch.delenv(SERVED_ENV, raising=False)
    with pytest.raises(InputError, match="does not run scripts"):
        check_ask(RecordAsk(str(tmp_path / "attack.py")))
    check_ask(RecordAsk(str(tmp_path / "attack.py")).keeping(object()))
