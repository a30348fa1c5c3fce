"""A Pilot test for every key binding of the app."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from attn_tui.tui.bindings import APP_BINDINGS
from attn_tui.tui.screens.help import HelpScreen
from attn_tui.tui.widgets.explanation import Explanation
from attn_tui.tui.widgets.heatmap import Heatmap
from tests.tui.helpers import run_from_palette, sample_app, settle, until

SIZE = (100, 32)


async def test_every_binding_has_an_id_and_description() -> None:
    ids = [b.id for b in APP_BINDINGS]
    assert all(ids) and len(set(ids)) == len(ids)
    assert all(b.description for b in APP_BINDINGS)


@pytest.mark.parametrize("keys", [("right",), ("l",)])
async def test_next_stage(keys: tuple[str, ...]) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home", *keys)
        assert app.explorer.stage_index == 1 and app.view.name == app.explorer.stage_names()[1]


@pytest.mark.parametrize("key", ["left", "h"])
async def test_previous_stage(key: str) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        start = app.explorer.stage_index
        await pilot.press(key)
        assert app.explorer.stage_index == start - 1


async def test_home_and_end() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end")
        assert app.view.name == "output"
        await pilot.press("home")
        assert app.view.name == "embedding"
        await pilot.press("left")
        assert app.explorer.stage_index == 0  # stays at the first stage


async def test_space_plays_to_the_end_and_stops() -> None:
    app = sample_app(play_interval=0.01)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        seen = []
        app.explorer.go_to_place = lambda n, real=app.explorer.go_to_place: (seen.append(n), real(n))
        await pilot.press("home", "space")
        await until(pilot, lambda: not app.navigation.playing)
        assert not app.navigation.playing and app.view.name == "output"
        assert seen == list(range(len(app.explorer.stage_names())))  # every stage, in order


async def test_space_twice_stops_playing() -> None:
    app = sample_app(play_interval=3600)  # no step comes between the two presses, however slow the machine
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("end", "space")
        assert app.navigation.playing and app.explorer.stage_index == 0  # started over from the last stage's end
        await pilot.press("space")
        assert not app.navigation.playing


async def test_digits_jump_to_stages() -> None:
    app = sample_app("multihead_korean")  # 14 stages: every digit has a target
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = app.explorer.stage_names()
        for n in range(1, 11):
            await pilot.press(str(n % 10))
            assert app.explorer.stage_index == n - 1, n
            assert app.view.name == names[n - 1]


async def test_digit_beyond_the_last_stage_does_nothing() -> None:
    app = sample_app("lookup")  # typed matrices: 8 stages
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("3")
        await pilot.press("9")
        assert app.explorer.stage_index == 2


async def test_brackets_change_the_head() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("7")  # scores, a per-head stage
        await pilot.press("right_square_bracket")
        assert app.explorer.head == 1 and app.view.head == 1
        await pilot.press("left_square_bracket", "left_square_bracket")
        assert app.explorer.head == 3  # wraps around
        assert "3 of 4" in str(app.query_one("#head-view").render())


async def test_brackets_on_one_head_explain_why_nothing_changes() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("right_square_bracket")
        assert app.explorer.head == 0
        assert any("multihead" in n.message for n in app.notices)


async def test_g_toggles_the_heads_grid() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        assert app.explorer.panel in ("heads", "model_grid", "alignment")
        assert app.query_one("#heads-grid").display and not app.query_one(Heatmap).display
        await pilot.press("g")
        assert app.explorer.panel == "heatmap" and app.query_one(Heatmap).display


async def test_t_toggles_korean() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("8", "t")  # the weights stage, in Korean
        assert app.language == "ko"
        assert "소프트맥스" in str(app.query_one(Explanation).render())
        await pilot.press("t")
        assert app.language == "en" and "Softmax" in str(app.query_one(Explanation).render())


async def test_cursor_keys() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("8")  # weights: 3 × 3
        assert app.cursor == (0, 0)
        await pilot.press("down", "shift+right", "shift+right", "shift+right")
        assert app.cursor == (1, 2)  # clamped at the last key
        await pilot.press("shift+down", "up", "shift+up", "shift+left")
        assert app.cursor == (0, 1)
        assert "[0, 1]" in str(app.query_one("#inspector").render())


async def test_click_moves_the_cursor() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        heatmap = app.query_one(Heatmap)
        lay = heatmap.layout_info
        await pilot.click(Heatmap, offset=(lay.label_width + 2 * lay.cell_width + 1, 2))
        await pilot.pause()
        assert app.cursor == (1, 2)


async def test_comma_and_full_stop_pick_the_energy_query() -> None:
    app = sample_app("cross_attention")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("6")
        assert app.view.name == "energy" and app.view.index_prefix == (0,)
        await pilot.press("full_stop", "full_stop")
        assert app.view.index_prefix == (2,) and "'to'" in app.view.note
        await pilot.press("comma")
        assert app.view.index_prefix == (1,)


async def test_escape_returns_focus_to_the_heatmap() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#sentence", Input).focus()
        await pilot.press("l")  # typed into the sentence, not a stage step
        assert app.query_one("#sentence", Input).value.endswith("l")
        await pilot.press("escape")
        assert isinstance(app.focused, Heatmap)


@pytest.mark.parametrize("key", ["question_mark", "f1"])
async def test_help_opens_and_closes(key: str) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press(key)
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_ctrl_p_opens_the_palette_with_our_commands() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await run_from_palette(pilot, "go to stage: scores")
        assert app.view.name == "scores"


async def test_ctrl_q_quits() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_code in (0, None)


async def test_pageup_and_pagedown_scroll_the_heatmap() -> None:
    app = sample_app("long_paragraph")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        heatmap = app.query_one(Heatmap)
        heatmap.focus()
        await pilot.press("pagedown")
        await pilot.pause()
        assert heatmap.scroll_offset.y > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert heatmap.scroll_offset.y == 0


@pytest.mark.parametrize("key", ["escape", "q", "question_mark", "f1"])
async def test_every_help_close_key(key: str) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press(key)
        assert not isinstance(app.screen, HelpScreen)


async def test_p_toggles_the_learned_parameters() -> None:
    app = sample_app("cross_attention")  # additive: W_a, U_a and the vector v_a
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("p")
        assert app.explorer.panel == "params" and app.query_one("#heads-grid").display
        titles = app.query_one("#heads-grid").titles
        assert titles == ["W_a 4×4", "U_a 4×4", "v_a 4"]  # v_a is a vector, drawn as one row
        await pilot.press("g")  # switches straight to the heads grid
        assert app.explorer.panel in ("heads", "model_grid", "alignment")
        await pilot.press("g")
        assert app.explorer.panel == "heatmap" and app.query_one(Heatmap).display


async def test_page_keys_scroll_the_parameters_panel() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("p")
        panel = app.query_one("#heads-grid")
        assert app.focused is panel
        await pilot.press("pagedown")
        await pilot.pause()
        assert panel.scroll_offset.y > 0
        await pilot.press("pageup")
        await pilot.pause()
        assert panel.scroll_offset.y == 0
        before = app.explorer.stage_index
        await pilot.press("right")  # arrows still step stages with the panel focused
        assert app.explorer.stage_index == before + 1


async def test_t_in_the_help_switches_the_language_and_rewrites_the_help() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        start = app.language
        await pilot.press("question_mark")
        await pilot.press("t")
        await pilot.pause()
        assert app.language != start and isinstance(app.screen, HelpScreen)
        hint = str(app.screen.query_one(".hint").render())
        assert ("닫" in hint) == (app.language == "ko"), hint


async def test_q_quits_and_the_footer_says_so() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        footer = [binding for (_, binding, enabled, _) in app.active_bindings.values() if binding.show]
        assert any(binding.key == "q" and binding.action == "quit" for binding in footer)
        await pilot.press("i")  # typing: q is a letter of the sentence
        await pilot.press("q")
        assert app.is_running
        await pilot.press("escape")
        await pilot.press("q")
        await pilot.pause()
    assert app.return_code in (0, None) and not app.is_running
