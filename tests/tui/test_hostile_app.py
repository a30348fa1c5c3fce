"""The app never crashes on text, keeps what was typed across model switches, and stays live on huge parameters."""

from __future__ import annotations

import pytest
from rich.cells import cell_len
from textual.widgets import Input, TextArea

from attn_tui.ask.settings import ModelAsk
from attn_tui.present.stage_view import PARAM_COLS, PARAM_ROWS, param_grids
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.input_pane import InputPane
from tests.tui.helpers import sample_app, settle

SIZE = (100, 32)
MARKUP = "[bold red]x a [/] b [x] [link=file:///etc]y"


async def _type_sentence(pilot, text: str) -> None:
    pilot.app.query_one("#sentence", Input).value = text
    await pilot.pause()
    await settle(pilot)


async def test_markup_in_a_sentence_shows_as_typed() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type_sentence(pilot, MARKUP)
        assert app.trace.query_tokens == tuple(MARKUP.split())
        assert "[bold" in str(app.query_one("#tokens").render())
        await pilot.press("end")  # the output stage, its labels, the inspector
        await pilot.pause()
        assert "'[bold' × " in str(app.query_one("#inspector").render())


async def test_markup_in_errors_and_notices_shows_as_typed() -> None:
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#edit-Q", TextArea).text = "1 [/] 2"
        await pilot.pause()
        assert "✗" in str(app.query_one("#matrix-status").render())
        app.notify("[/] closing tag with nothing open [bold")  # a sample's notes, an error: never markup
        await pilot.pause()


async def test_each_model_keeps_its_own_sentence() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type_sentence(pilot, "my own words")
        app.editing.choose_model("seq2seq-dates")
        await settle(pilot)
        dates = app.query_one(InputPane).sentence
        assert dates != "my own words" and app.trace.meta.model == "seq2seq-dates"
        await _type_sentence(pilot, "22 Nov 2026")
        app.editing.choose_model(None)
        await settle(pilot)
        assert app.query_one(InputPane).sentence == "my own words"
        assert app.trace.query_tokens == ("my", "own", "words")
        app.editing.choose_model("seq2seq-dates")
        await settle(pilot)
        assert app.query_one(InputPane).sentence == "22 Nov 2026"


async def test_a_model_that_fails_keeps_the_matrix_editors() -> None:
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#edit-Q", TextArea).text = "1 2 3\n4 5 x"  # half typed, invalid
        await pilot.pause()
        app.editing.choose_model("/no/such/model/folder")
        await settle(pilot)
        assert not isinstance(app.wanted, ModelAsk) and "no model" in app.error
        assert app.query_one("#edit-Q", TextArea).text == "1 2 3\n4 5 x"
        assert app.trace is not None  # the last good trace stays on show


@pytest.mark.slow
async def test_params_panel_draws_an_overview_of_a_4096_wide_weight() -> None:
    app = sample_app("korean", dim=4096)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        await pilot.pause()
        assert any("W_q 4096×4096 (block means" in title for title in app.query_one(HeadsGrid).titles)
        assert all(grid.rows <= PARAM_ROWS and grid.cols <= PARAM_COLS for _, grid in param_grids(app.trace))


async def test_a_rejected_setting_is_said_where_it_cannot_scroll_away() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#set-seed", Input).value = "9" * 40
        await pilot.pause()
        assert "seed must be between" in app.error and "last valid result" in app.error
        app.query_one("#set-seed", Input).value = "3"
        await settle(pilot)
        assert "seed" not in app.error and app.trace.meta.settings.seed == 3


@pytest.mark.slow
async def test_g_on_a_long_input_draws_every_head_from_sampled_cells() -> None:
    from attn_tui.ask.settings import SentenceInput, Settings, VariantAsk
    from attn_tui.present.stage_view import SMALL_COLS, SMALL_ROWS, heads_panel
    from tests.tui.helpers import RecordingApp

    text = " ".join(f"w{i % 97}" for i in range(3000))
    app = RecordingApp(VariantAsk(SentenceInput(text), Settings(variant="multihead", heads=4, dim=16)))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.press("g")
        await pilot.pause()
        assert app.query_one(HeadsGrid).titles == ["head 0", "head 1", "head 2", "head 3"]
        panel = heads_panel(app.trace, app.view, 0)
        assert all(g.rows <= SMALL_ROWS and g.cols <= SMALL_COLS for _, g in panel.grids)
        assert "evenly spaced" in panel.note and panel.shared == (0.0, 1.0)


@pytest.mark.parametrize("settings", [{"variant": "bogus"}, {"mask": "zzz"}, {"dtype": "int8"}, {"heads": "2"}])
async def test_a_session_with_a_value_no_menu_holds_starts_fresh(settings: dict[str, object]) -> None:
    """Once a crash before the first frame (a Select cannot show 'bogus'); now a notice and the defaults."""
    import json

    from attn_tui.io.session import session_path
    from tests.tui.helpers import RecordingApp

    path = session_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"version": 1, "sentence": "내 문장", "settings": settings}), encoding="utf-8")
    app = RecordingApp(fresh=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.query_tokens == ("나는", "학교에", "간다")
        assert any("could not be read" in n.message and "settings." in n.message for n in app.notices)
    assert path.with_name("session.json.broken").exists()  # set aside, not lost


@pytest.mark.parametrize("typed,fragment", [("~no-such-user-here/x.json", "no directory"),
                                            ("a\0b.json", "NUL"), ("", "name a file"), ("/dev/full", "device")])
async def test_an_export_path_that_cannot_be_written_is_said_on_the_export_screen(typed: str, fragment: str) -> None:
    from attn_tui.tui.screens.export import ExportScreen

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ExportScreen)
        screen.query_one("#export-path", Input).value = typed
        await pilot.press("enter")
        await pilot.pause()
        assert app.screen is screen and fragment in str(screen.query_one("#export-error").render())
        assert screen.query_one("#export-path", Input).value == typed  # nothing typed is lost


async def test_a_result_that_arrives_while_the_app_shuts_down_is_dropped() -> None:
    """Quitting while a model loads: the worker's message is handled after the panes are gone, and must not crash."""
    from attn_tui.tui.messages import ComputeFailed

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        ask = app.wanted
    app.on_compute_failed(ComputeFailed(app.state.generation, ModelAsk("minilm", "a"), "late"))
    app.on_trace_ready(type("Late", (), {"generation": app.state.generation, "shown": None})())  # type: ignore[arg-type]
    assert app.wanted is ask and app._exception is None


ESCAPES = "ab \x1b]52;c;aGk=\x07 cd \x1b]2;pwned\x07 \u202eevil \x9b31m"


def _clean_text(text: str) -> bool:
    from attn_tui.io.controls import UNSAFE

    return UNSAFE.search(text) is None


def _raw_on_screen(app) -> list[str]:
    """Unsafe characters in what the compositor would send to the terminal (Textual's own control segments aside)."""
    from attn_tui.io.controls import UNSAFE

    return [ascii(seg.text) for strip in app.screen._compositor.render_strips() for seg in strip
            if not seg.control and UNSAFE.search(seg.text)]


async def test_a_pasted_escape_is_echoed_as_symbols_and_kept_as_typed() -> None:
    """`ESC ] 52` pasted into the sentence or an editor would write the clipboard: it is drawn ␛, and kept."""
    from textual import events

    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        sentence = app.query_one("#sentence", Input)
        sentence.focus()
        await pilot.pause()
        sentence.post_message(events.Paste(ESCAPES))
        await pilot.pause()
        await settle(pilot)
        assert sentence.value == ESCAPES and app.trace.query_tokens == tuple(ESCAPES.split())
        assert not _raw_on_screen(app)
        assert "␛]52;c;aGk=␇" in str(sentence.render_line(0).text)
        assert sentence._cursor_offset == cell_len(str(sentence._value)) + 1  # measured as drawn: the cursor at the end
        app.query_one("#input-tabs").active = "tab-matrices"
        editor = app.query_one("#edit-Q", TextArea)
        editor.focus()
        await pilot.pause()
        editor.post_message(events.Paste("x\x1b]2;t\x07: 1 0\n"))
        await pilot.pause()
        await settle(pilot)
        assert editor.text.startswith("x\x1b]2;t\x07: 1 0\n") and not _raw_on_screen(app)
        app.notify("\x1b]2;title\x07 from a path", title="\u202e")  # toasts draw the text as it is handed over
        await pilot.pause()
        shown = list(app._notifications)[-1]
        assert (shown.message, shown.title) == ("␛]2;title␇ from a path", "�")


async def test_a_model_path_with_escapes_is_echoed_and_reported_as_symbols() -> None:
    """A folder name holding `ESC ] 2` (typed in the model pane): the field, the status and the error stay clean."""
    from textual import events

    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        path = app.query_one("#set-model-path", Input)
        path.focus()
        await pilot.pause()
        typed = "no\x1b]2;pwned\x07such"  # short: shown whole
        path.post_message(events.Paste(typed))
        await pilot.pause()
        assert path.value == typed and str(path._value).endswith("no␛]2;pwned␇such")  # what Input draws
        app.editing.choose_model(typed)  # what ⏎ in the field asks for
        await settle(pilot)
        await pilot.pause()
        assert not _raw_on_screen(app)
        said = [str(n.message) + str(n.title) for n in app._notifications if "pwned" in str(n.message) + str(n.title)]
        assert said and all(_clean_text(s) for s in said), said  # the name drawn (␛) or spelled (\\x1b), never sent
        assert "␛]2;pwned" in str(app.query_one("#model-status").render()) + "".join(said)
