"""The model pane's path field completes like a shell: the completion itself, then the field in the app."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from textual.widgets import Input, Select

from attn_tui.tui.path_completion import complete
from tests.tui.helpers import sample_app, settle

SIZE = (100, 32)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """models/ holding a model folder, a plain folder, a file and a hidden folder."""
    models = tmp_path / "models"
    (models / "llama-tiny").mkdir(parents=True)
    (models / "llama-tiny" / "config.json").write_text("{}")
    (models / "lab").mkdir()
    (models / "la.txt").write_text("x")
    (models / ".local").mkdir()
    return tmp_path


def test_directories_come_first_and_end_with_a_slash(tree: Path) -> None:
    base = f"{tree}/models/"
    found = complete(base + "la")
    assert found.suggestion == base + "lab/" and not found.model  # a folder before the file la.txt
    assert complete(base + "la.").suggestion == base + "la.txt"
    assert complete(base + "la.txt").suggestion is None  # a file typed in full: nothing to add
    assert complete(base + "zz").suggestion is None


def test_a_model_folder_is_marked_and_is_complete(tree: Path) -> None:
    base = f"{tree}/models/"
    found = complete(base + "ll")
    assert found.suggestion == base + "llama-tiny/" and found.model
    whole = complete(base + "llama-tiny/")
    assert whole.suggestion is None and whole.model  # nothing deeper is offered: config.json is not the answer


def test_hidden_entries_only_when_the_typed_part_starts_with_a_dot(tree: Path) -> None:
    base = f"{tree}/models/"
    assert complete(base).suggestion == base + "lab/"
    assert complete(base + ".").suggestion == base + ".local/"


def test_home_is_expanded_and_kept_as_typed(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tree))
    assert complete("~").suggestion == "~/"
    assert complete("~/mo").suggestion == "~/models/"
    assert complete("~/models/ll").suggestion == "~/models/llama-tiny/"


def test_relative_paths_hostile_text_and_unreadable_folders(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    assert complete("mod").suggestion == "models/"
    assert complete("").suggestion is None
    assert complete("a\x00b").suggestion is None
    assert complete("no-such/dir/x").suggestion is None
    assert complete("models/la.txt/x").suggestion is None  # a file where a folder was expected


def test_a_huge_folder_is_read_only_as_far_as_the_limit(tmp_path: Path) -> None:
    for n in range(300):
        (tmp_path / f"f{n:04d}").write_text("")
    (tmp_path / "zz-dir").mkdir()
    order = [e.name for e in os.scandir(tmp_path)]
    found = complete(f"{tmp_path}/", limit=10)
    assert found.suggestion is not None
    assert found.suggestion.removeprefix(f"{tmp_path}/").rstrip("/") in order[:10]  # never past the limit


async def test_typing_a_path_suggests_tab_takes_it_and_a_model_folder_is_marked(tree: Path) -> None:
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-model", Select).value = "other"
        await pilot.pause()
        path = app.query_one("#set-model-path", Input)
        assert app.focused is path
        path.value = f"{tree}/mo"
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert path._suggestion == f"{tree}/models/"
        await pilot.press("tab")
        assert path.value == f"{tree}/models/" and app.focused is path
        await pilot.press("l", "l")
        await app.workers.wait_for_complete()
        await pilot.pause()
        await pilot.press("right")  # → at the end takes it too, as Textual's Input does
        assert path.value == f"{tree}/models/llama-tiny/"
        await app.workers.wait_for_complete()
        await pilot.pause()
        hint = app.query_one("#path-hint")
        assert hint.display and "model folder" in str(hint.render())
        await pilot.press("t")  # typed into the field, not the language key
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert not hint.display
        path.value = ""
        await pilot.pause()
        await pilot.press("tab")  # no suggestion: Tab moves focus on, as always
        assert app.focused is not path


async def test_a_refused_folder_says_so_in_one_line_and_keeps_the_typed_path(tree: Path) -> None:
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-model", Select).value = "other"
        await pilot.pause()
        typed = f"{tree}/models/lab"  # a folder, but no model in it
        app.query_one("#set-model-path", Input).value = typed
        await pilot.press("enter")
        await settle(pilot)
        await pilot.pause()
        errors = [n for n in app.notices if n.severity == "error"]
        assert errors and all("\n" not in n.message for n in errors)
        status = str(app.query_one("#model-status").render())
        assert "✗" in status and "\n" not in status
        app.query_one("#set-model", Select).value = "other"  # back to the path: what was typed is still there
        await pilot.pause()
        await settle(pilot)
        path = app.query_one("#set-model-path", Input)
        assert path.value == typed and path.display and app.focused is path  # to fix, not tried again as it is
        assert len([n for n in app.notices if n.severity == "error"]) == len(errors)
        path.value = f"{tree}/models/llama-tiny"  # fixed (a folder whose weights are not there: refused too)
        await pilot.press("enter")
        await settle(pilot)
        assert len([n for n in app.notices if n.severity == "error"]) == len(errors) + 1


async def test_a_served_app_never_lists_serves_folders(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A visitor on a web page must not learn what is on serve's disk: no completion at all."""
    from attn_tui.tui.served import SERVED_ENV

    monkeypatch.setenv(SERVED_ENV, "1")
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        path = app.query_one("#set-model-path", Input)
        assert path.suggester is None
        path.value = f"{tree}/mo"
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert path._suggestion == "" and not app.query_one("#path-hint").display
