"""Snapshots of each distinct screen state, reviewed by eye before being accepted.

Each app waits for its workers (`settle`) before the picture is taken, so the
snapshots never catch a half-computed frame.
"""

from __future__ import annotations

import importlib.util

import pytest
from textual.widgets import TabbedContent, TextArea

from attn_tui.ask.variants import VARIANTS
from tests.tui.helpers import model_app, sample_app, settle

pytestmark = pytest.mark.slow

STAGES = VARIANTS["scaled_dot"].stages

KOREAN_STAGES = ("embedding",) + STAGES


def _at_stage(name: str, *extra_keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index(name))
        if extra_keys:
            await pilot.press(*extra_keys)
        await pilot.pause()

    return run_before


@pytest.mark.parametrize("stage", KOREAN_STAGES)
def test_scaled_dot_korean_stage(snap_compare, stage: str) -> None:
    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=_at_stage(stage))


def test_padding_mask_masked_stage(snap_compare) -> None:
    assert snap_compare(sample_app("korean_padded"), terminal_size=(100, 32), run_before=_at_stage("masked"))


def test_heads_grid(snap_compare) -> None:
    assert snap_compare(sample_app("multihead_korean"), terminal_size=(100, 32),
                        run_before=_at_stage("weights", "g"))


def test_inspector_on_a_weights_cell(snap_compare) -> None:
    assert snap_compare(sample_app("korean"), terminal_size=(80, 24),
                        run_before=_at_stage("weights", "down", "shift+right"))


def test_dense_mode_long_paragraph_with_every_token_labelled(snap_compare) -> None:
    assert snap_compare(sample_app("long_paragraph"), terminal_size=(100, 32),
                        run_before=_at_stage("weights", *["down"] * 12, *["shift+right"] * 9))


def test_heads_grid_each_head_on_its_own_range(snap_compare) -> None:
    assert snap_compare(sample_app("multihead_korean"), terminal_size=(120, 40),
                        run_before=_at_stage("scores", "g", "s"))


def test_masked_cell_inspector_says_why(snap_compare) -> None:
    assert snap_compare(sample_app("korean_padded", mask="causal+padding"), terminal_size=(120, 40),
                        run_before=_at_stage("masked", "shift+right", "shift+right"))


def test_compare_fill_minus_inf_against_minus_1e9(snap_compare) -> None:
    async def run_before(pilot) -> None:
        from tests.tui.test_compare import _compare

        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("masked"))
        await _compare(pilot, "fill")
        await pilot.press("down", "down", "down")
        await pilot.pause()

    assert snap_compare(sample_app("korean_padded", mask="causal+padding"), terminal_size=(130, 40),
                        run_before=run_before)


def test_compare_positions_each_panel_on_its_own_scale(snap_compare) -> None:
    async def run_before(pilot) -> None:
        from tests.tui.test_compare import _compare

        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("scores"))
        await _compare(pilot, "positional")
        await pilot.press("s")  # A, B and B − A each on its own range, the line under them says so
        await pilot.pause()

    assert snap_compare(sample_app("korean"), terminal_size=(130, 40), run_before=run_before)


def test_compare_in_korean_says_which_scale_on_two_lines(snap_compare) -> None:
    async def run_before(pilot) -> None:
        from tests.tui.test_compare import _compare

        await settle(pilot)
        await pilot.press("t")
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("weights"))
        await _compare(pilot, "positional")
        await pilot.pause()

    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=run_before)


def test_query_wider_than_the_pane_keeps_its_numbers_scrolled_to_its_last_column(snap_compare) -> None:
    assert snap_compare(sample_app("korean", dim=24), terminal_size=(100, 32),
                        run_before=_at_stage("query", *["shift+right"] * 23))


def test_korean_mode(snap_compare) -> None:
    assert snap_compare(sample_app("korean"), terminal_size=(120, 40),
                        run_before=_at_stage("weights", "t", "down"))


def test_matrices_tab_with_a_malformed_matrix(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        app = pilot.app
        app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
        app.query_one("#edit-Q", TextArea).text = "1 0\n0 1"
        app.query_one("#edit-K", TextArea).text = "1 0\n0 1\n1 1"
        app.query_one("#edit-V", TextArea).text = "1 2\n3 4\n5 6"
        await pilot.pause()
        await settle(pilot)
        app.query_one("#edit-K", TextArea).text = "1 0\n0 one\n1 1"
        await pilot.pause()

    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=run_before)


def test_export_dialog_says_why_a_path_cannot_take_the_file(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # the dialog names the folder a bare name goes to: the same on every machine

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        path = pilot.app.screen.query_one("#export-path")
        path.cursor_blink = False  # the picture must not depend on when the cursor blinked
        path.value = "/nonexistent/dir/x.json"  # typed: no machine's own path
        path.action_end()  # the cursor after the text, nothing selected
        await pilot.press("enter")
        await pilot.pause()

    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=run_before)


def test_help_screen(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(sample_app("korean"), terminal_size=(100, 32), run_before=run_before)


def test_terminal_too_small(snap_compare) -> None:
    assert snap_compare(sample_app("korean"), terminal_size=(40, 12), run_before=_at_stage("weights"))


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs attn-tui[models]")
def test_minilm_layer_by_head_grid(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()

    assert snap_compare(model_app("minilm", "the cat sat", layer=2, head=5), terminal_size=(100, 32),
                        run_before=run_before)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="needs attn-tui[models]")
def test_minilm_query_from_its_first_column(snap_compare) -> None:
    assert snap_compare(model_app("minilm", "the cat sat on the mat"), terminal_size=(120, 40),
                        run_before=_at_stage("query", *["shift+right"] * 31, *["shift+left"] * 31))


def test_seq2seq_finished_alignment(snap_compare) -> None:
    assert snap_compare(model_app("seq2seq-dates", "26년 11월 22일 일요일"), terminal_size=(100, 32),
                        run_before=_at_end)


async def _at_end(pilot) -> None:
    await settle(pilot)
    await pilot.press("end")
    await pilot.pause()
