"""Work is kept: the session survives a restart, a sample never silently replaces what was typed, exports land
where the notice says."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from textual.widgets import Input, TextArea

from attn_tui.io.session import Session, SessionError, load, parse, save, session_path
from attn_tui.tui.screens.export import ExportScreen
from tests.tui.helpers import RecordingApp, sample_app, settle

SIZE = (110, 34)


async def test_the_session_round_trips_through_a_restart() -> None:
    app = RecordingApp(fresh=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#sentence", Input).value = "나는 어제 책을 읽었다"
        app.query_one("#edit-Q", TextArea).text = "1 0\n0 1x"  # invalid, and still kept
        app.query_one("#set-mask").value = "causal"
        await settle(pilot)
        await pilot.press("t")
    saved = json.loads(session_path().read_text(encoding="utf-8"))
    assert saved["sentence"] == "나는 어제 책을 읽었다" and saved["language"] == "ko"
    again = RecordingApp(fresh=False)
    async with again.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert again.trace.query_tokens == ("나는", "어제", "책을", "읽었다")
        assert again.trace.meta.settings.mask == "causal" and again.language == "ko"
        assert again.query_one("#edit-Q", TextArea).text == "1 0\n0 1x"
    fresh = RecordingApp(fresh=True)
    async with fresh.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert fresh.trace.query_tokens == ("나는", "학교에", "간다")  # --fresh: the defaults


@pytest.mark.parametrize("text", ["{not json", json.dumps({"version": 1, "settings": {"dim": "wide"}}),
                                  json.dumps({"version": 99}), json.dumps([1, 2, 3]), "\0\0"])
async def test_a_broken_session_is_set_aside_with_a_notice(text: str) -> None:
    path = session_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    app = RecordingApp(fresh=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.query_tokens == ("나는", "학교에", "간다")
        assert any("could not be read" in n.message for n in app.notices)
    assert path.with_name("session.json.broken").exists()


def test_sessions_parse_only_what_they_should(tmp_path: Path) -> None:
    good = Session(sentence="a b", editors={"Q": "1 2"}, language="ko")
    save(good, tmp_path / "s.json")
    assert load(tmp_path / "s.json") == good
    assert load(tmp_path / "absent.json") is None
    for bad in ('{"version": 1, "settings": {"heads": true}}', '{"version": 1, "custom_mask": [["x"]]}',
                '{"version": 1, "source": "video"}', '{"version": 1, "model": {"name": 3}}'):
        with pytest.raises(SessionError):
            parse(bad)


async def test_a_sample_does_not_silently_replace_typed_matrices() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for name, text in (("Q", "1 0\n0 1"), ("K", "1 0\n0 1"), ("V", "5 6\n7 8")):
            app.query_one(f"#edit-{name}", TextArea).text = text
        await settle(pilot)
        typed = app.trace
        app.editing.load_sample("lookup")
        await settle(pilot)
        assert app.query_one("#edit-Q", TextArea).text.startswith("0 10 0")
        assert any("ctrl+z" in n.message for n in app.notices)
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.query_one("#edit-V", TextArea).text == "5 6\n7 8"
        assert app.trace.tensor("value").tolist() == typed.tensor("value").tolist()


async def _export(pilot, what: str, fmt: str, path: Path) -> None:
    app = pilot.app
    await pilot.press("e")
    await pilot.pause()
    screen = app.screen
    assert isinstance(screen, ExportScreen)
    screen.query_one(f"#what-{what}").value = True
    if what != "screen":
        screen.query_one(f"#fmt-{fmt}").value = True
    await pilot.pause()
    path_input = screen.query_one("#export-path", Input)
    path_input.value = str(path)
    path_input.focus()
    await pilot.press("enter")
    for _ in range(50):
        await app.workers.wait_for_complete()
        await pilot.pause()
        if path.exists():
            break


async def test_export_the_stage_the_trace_and_the_screen(tmp_path: Path) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("8")  # weights
        await _export(pilot, "stage", "json", tmp_path / "w.json")
        data = json.loads((tmp_path / "w.json").read_text(encoding="utf-8"))
        assert [s["name"] for s in data["stages"]] == ["weights"]
        assert np.allclose(data["stages"][0]["data"], app.trace.tensor("weights").numpy())
        await _export(pilot, "trace", "npz", tmp_path / "t.npz")
        with zipfile.ZipFile(tmp_path / "t.npz") as archive:
            assert {n.removesuffix(".npy") for n in archive.namelist()} == {s.key for s in app.trace}
        arrays = np.load(tmp_path / "t.npz")
        assert np.allclose(arrays["scores"], app.trace.tensor("scores").numpy())
        await _export(pilot, "stage", "csv", tmp_path / "w.csv")
        assert (tmp_path / "w.csv").read_text(encoding="utf-8").splitlines()[0] == "query,나는,학교에,간다"
        await _export(pilot, "screen", "svg", tmp_path / "screen.svg")
        assert (tmp_path / "screen.svg").read_text(encoding="utf-8").lstrip().startswith("<svg")
        notices = [n.message for n in app.notices]
        assert any(str(tmp_path / "w.json") in m for m in notices) and any("screen.svg" in m for m in notices)


async def test_an_export_to_a_place_that_cannot_be_written_says_so(tmp_path: Path) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _export(pilot, "stage", "json", tmp_path / "no" / "such" / "dir.json")
        await pilot.pause()
        screen = app.screen  # said on the export screen itself, with the path still as typed
        assert isinstance(screen, ExportScreen) and "no directory" in str(screen.query_one("#export-error").render())
        assert screen.query_one("#export-path", Input).value == str(tmp_path / "no" / "such" / "dir.json")


async def test_the_extension_follows_what_is_written_and_the_name_typed_stays(tmp_path: Path) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        path_input = screen.query_one("#export-path", Input)
        assert app.focused is path_input  # first on screen, first in the focus order
        hints = " ".join(str(label.render()) for label in screen.query(".hint"))
        assert "where attn-tui started" in hints and str(Path.cwd()) in hints  # the folder, by name
        await pilot.press("tab")
        assert app.focused is screen.query_one("#export-what")  # then the choices, in the order drawn
        path_input.value = str(tmp_path / "mine.json")
        screen.query_one("#fmt-npz").value = True
        await pilot.pause()
        assert path_input.value == str(tmp_path / "mine.npz")  # the name typed stays; its extension follows
        screen.query_one("#what-screen").value = True
        await pilot.pause()
        assert path_input.value == str(tmp_path / "mine.svg")
        path_input.value = str(tmp_path / "shot.json")  # typed against the choice: the screen is still an SVG
        path_input.focus()
        await pilot.press("enter")
        for _ in range(50):
            await pilot.pause()
            if (tmp_path / "shot.svg").exists():
                break
        assert (tmp_path / "shot.svg").read_text(encoding="utf-8").lstrip().startswith("<svg")
        assert not (tmp_path / "shot.json").exists()
        assert any(str(tmp_path / "shot.svg") in str(n.message) for n in app.notices)


async def test_a_large_export_says_its_size_and_asks_before_writing(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from attn_tui.tui.screens.choose import ChoiceScreen

    monkeypatch.setattr("attn_tui.tui.screens.export.LARGE", 1000)  # bytes: this stage's JSON is larger
    app = sample_app("long_paragraph")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        target = tmp_path / "big.json"
        await _export(pilot, "stage", "json", target)
        assert isinstance(app.screen, ChoiceScreen) and not target.exists()  # asked, nothing written yet
        question = str(app.screen.query_one(".choice-title").render())
        assert question.startswith("This export is about ") and "big.json" in question
        await pilot.press("down", "enter")  # "do not write it"
        for _ in range(5):
            await app.workers.wait_for_complete()
            await pilot.pause()
        assert not target.exists() and not isinstance(app.screen, ChoiceScreen)
        await _export(pilot, "stage", "json", target)
        await pilot.press("enter")  # "write …"
        for _ in range(50):
            await app.workers.wait_for_complete()
            await pilot.pause()
            if target.exists():
                break
        assert json.loads(target.read_text(encoding="utf-8"))["stages"]


async def test_the_next_export_is_offered_where_the_last_one_went(tmp_path: Path) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        folder = tmp_path / "exports"
        folder.mkdir()
        await _export(pilot, "stage", "json", folder / "first.json")
        assert (folder / "first.json").exists() and app.state.export_folder == str(folder.resolve())
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        assert Path(screen.query_one("#export-path", Input).value).parent == folder.resolve()
        assert str(folder.resolve()) in " ".join(str(label.render()) for label in screen.query(".hint"))
        await pilot.press("escape")
        assert app.editing.session().export_folder == str(folder.resolve())  # kept for the next start
