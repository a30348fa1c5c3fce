"""The input pane: sentences, typed matrices (errors keep the last heatmap), samples; sizes."""

from __future__ import annotations

import pytest
from textual.widgets import Input, OptionList, TabbedContent, TextArea

from attn_tui.ask.samples import load_samples
from attn_tui.tui.widgets.heatmap import Heatmap
from tests.limits import limit
from tests.tui.helpers import sample_app, settle

SIZE = (100, 32)


async def test_first_screen_before_torch_says_it_is_loading() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        assert app.trace is None or app.torch_ready
        heatmap = app.query_one(Heatmap)
        if app.trace is None:
            assert "loading torch" in heatmap.message
        await settle(pilot)
        assert app.trace is not None and heatmap.grid is not None


async def test_typing_a_sentence_shows_tokens_and_recomputes() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        field = app.query_one("#sentence", Input)
        field.focus()
        await pilot.press("end", *" 집에 왔다")
        await settle(pilot)
        assert app.trace.query_tokens == ("나는", "학교에", "간다", "집에", "왔다")
        assert "왔다" in str(app.query_one("#tokens").render())
        assert app.view.grid.row_labels[-1] == "왔다"


async def test_empty_sentence_shows_an_error_and_keeps_the_trace() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        trace = app.trace
        app.query_one("#sentence", Input).value = "   "
        await pilot.pause()
        assert app.trace is trace
        assert "empty" in str(app.query_one("#tokens").render())


async def _type_matrices(pilot, q: str, k: str, v: str) -> None:
    app = pilot.app
    app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
    for name, text in (("Q", q), ("K", k), ("V", v)):
        app.query_one(f"#edit-{name}", TextArea).text = text
    await pilot.pause()
    await settle(pilot)


async def test_malformed_matrix_keeps_the_last_valid_heatmap_and_shows_the_error() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _type_matrices(pilot, "1 0\n0 1", "1 0\n0 1\n1 1", "1 2\n3 4\n5 6")
        good = app.trace
        assert good.query_tokens == ("q0", "q1") and app.view.grid.rows == 2
        editor = app.query_one("#edit-K", TextArea)
        editor.focus()
        editor.move_cursor((1, 3))
        await pilot.press("x")
        await pilot.pause()
        error = str(app.query_one("#error-K").render())
        assert "line 2, column 3" in error and "'1x'" in error
        assert str(app.query_one("#matrix-status").render()) == error  # visible above the editors
        assert editor.text == "1 0\n0 1x\n1 1"  # what was typed stays
        assert app.trace is good and app.query_one(Heatmap).grid is app.view.grid
        await pilot.press("backspace")
        await settle(pilot)
        assert str(app.query_one("#error-K").render()) == ""


async def test_mismatched_shapes_report_and_keep_the_trace() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        trace = app.trace
        await _type_matrices(pilot, "1 0 0", "1 0\n0 1", "1\n2")
        assert app.trace is trace
        assert "last dimensions must match" in app.error and "last valid" in app.error


async def test_x_editor_feeds_multihead() -> None:
    app = sample_app(variant="multihead")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#edit-X", TextArea).text = "1 0 0 1\n0 1 1 0\n1 1 0 0"
        await pilot.pause()
        await settle(pilot)
        assert app.trace.query_tokens == ("x0", "x1", "x2") and app.trace.heads == 2


async def test_samples_tab_enter_loads_a_sample() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#input-tabs", TabbedContent).active = "tab-samples"
        options = app.query_one("#sample-list", OptionList)
        options.focus()
        names = list(load_samples())
        options.highlighted = names.index("cross_attention")
        await pilot.press("enter")
        await settle(pilot)
        assert app.trace.meta.title == "additive" and app.trace.meta.settings.mask == "padding"
        assert app.query_one("#set-variant").value == "additive"
        assert app.query_one("#edit-Q", TextArea).text.startswith("I: 0.9 0.1")  # rows carry their tokens
        assert app.trace.key_tokens[0] == "나는"


@pytest.mark.slow
async def test_every_sample_loads() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        for name, sample in load_samples().items():
            app.editing.load_sample(name)
            await settle(pilot)
            assert app.shown.ask == (sample.model or sample.request), name
            assert app.error == "" or "mask" in app.error, (name, app.error)


async def test_terminal_too_small_shows_a_message() -> None:
    app = sample_app()
    async with app.run_test(size=(40, 12)) as pilot:
        await settle(pilot)
        assert app.query_one("#too-small").display
        assert not app.query_one("#main").display
        await pilot.resize_terminal(100, 32)
        await pilot.pause()
        assert app.query_one("#main").display and not app.query_one("#too-small").display


async def test_dense_mode_for_the_long_paragraph() -> None:
    app = sample_app("long_paragraph")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("8")  # weights
        heatmap = app.query_one(Heatmap)
        n = len(app.trace.query_tokens)
        assert n >= 64
        lay = heatmap.layout_info
        assert not lay.show_values and lay.lines == n  # colour cells, one row a line, every row labelled
        assert heatmap.virtual_size.height == lay.header_height + n
        await pilot.press(*["down"] * 30)
        assert app.cursor[0] == 30 and heatmap.scroll_offset.y > 0


async def test_multihead_with_typed_qkv_asks_for_x() -> None:
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        trace = app.trace
        app.query_one("#set-variant").value = "multihead"
        await pilot.pause()
        await settle(pilot)
        assert app.trace is trace and "X editor" in app.error
        app.query_one("#edit-X", TextArea).text = "1 0\n0 1"
        await pilot.pause()
        await settle(pilot)
        assert app.trace.meta.title == "multihead" and app.trace.query_tokens == ("x0", "x1")


def test_model_samples_are_offered_in_the_app() -> None:
    names = set(load_samples())
    assert {"korean", "long_paragraph", "multihead_korean", "minilm_it", "dates_korean", "dates_english"} <= names


@pytest.mark.slow
@pytest.mark.parametrize("key", ["Q", "V", "X"])
async def test_an_editor_jumped_to_is_in_view_on_a_short_terminal(key: str) -> None:
    """On a 24-line terminal the matrices' editors sit below the fold: the one a key jumps to is scrolled up."""
    app = sample_app()
    async with app.run_test(size=(120, 24)) as pilot:
        await settle(pilot)
        await pilot.press(key)
        await settle(pilot)
        editor = app.query_one(f"#edit-{key}", TextArea)
        assert app.focused is editor
        scroll = app.query_one("#matrices")
        assert scroll.region.contains_region(editor.region) or editor.region.y < scroll.region.bottom, (
            editor.region, scroll.region)
        assert editor.region.y >= scroll.region.y and editor.region.y < scroll.region.bottom


@pytest.mark.slow
async def test_a_matrix_error_keeps_the_last_valid_result_says_so_and_follows_t() -> None:
    """Typing nan over Q's last number: nothing is computed from the broken editor, the error line says the heatmap
    is the last valid result, and `t` redraws the editor's error in Korean at once (no keystroke needed)."""
    app = sample_app("note_004_bahdanau")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("Q")
        await settle(pilot)
        await pilot.press("end", "backspace", "backspace", "backspace")
        await settle(pilot)
        valid = app.shown
        await pilot.press(*"nan")
        await pilot.pause()
        await settle(pilot)
        assert "nan is not a finite number" in app.error and app.error.endswith("(showing the last valid result)")
        assert app.shown is valid and app.state.generation == app.state.shown_generation
        assert not app.query_one(Heatmap).loading
        app.query_one(Heatmap).focus()  # `t` typed in the editor would be a letter of the matrix
        await pilot.press("t")
        await pilot.pause()
        shown = str(app.query_one("#error-Q").render())
        assert shown.startswith("✗ Q, 줄 1, 열 17: nan은 유한한 수가 아닙니다"), shown
        assert "nan is not" not in app.error and "nan" in app.error
        assert str(app.query_one("#matrix-status").render()) == shown


@pytest.mark.slow
async def test_a_matrix_error_arriving_while_a_result_is_in_flight_drops_that_result(monkeypatch) -> None:
    """A half-typed matrix that was valid for a moment is not shown once the editor went wrong, nor used by the
    next settings change: the computation of it is held until the error has arrived, then let go."""
    import threading

    import attn_tui.sources as door

    app = sample_app("note_004_bahdanau")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = app.shown
        release = threading.Event()
        run = door.run

        def held(ask, *args, **kwargs):  # the worker's computation, waiting until the test lets it finish
            release.wait(timeout=limit(30))
            return run(ask, *args, **kwargs)

        monkeypatch.setattr(door, "run", held)
        editor = app.query_one("#edit-Q", TextArea)
        editor.text = "s: 0.5 -0.2 0.1"  # valid (additive takes any query width): asked for at once
        await pilot.pause()
        assert app.wanted.source.q == [[0.5, -0.2, 0.1]]
        editor.text = "s: 0.5 -0.2 0.1 nan"  # broken before that result is back
        await pilot.pause()
        release.set()
        await settle(pilot)
        assert app.shown is before and "(showing the last valid result)" in app.error
        app.editing.set_setting("temperature", 2.0)  # a setting changed meanwhile applies to the input on show
        await settle(pilot)
        assert app.shown.ask.source == before.ask.source and app.shown.ask.settings.temperature == 2.0


@pytest.mark.slow
async def test_the_x_editor_title_wraps_in_a_120_by_40_terminal() -> None:
    from rich.cells import cell_len

    app = sample_app("note_004_bahdanau")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for _round in range(2):  # English, then Korean (`t`)
            title = app.query_one("#title-X")
            scroll = app.query_one("#matrices")
            text = str(title.render())
            assert title.region.right <= scroll.region.right
            assert title.size.width * title.size.height >= cell_len(text), (title.size, text)
            await pilot.press("t")
            await pilot.pause()
