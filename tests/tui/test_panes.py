"""The model pane and the ways to move: toggles that read on and off, the recorded program's rows, counting from 0,
the stage picker (`/`) and palette commands that change settings."""

from __future__ import annotations

import io

import pytest
import torch
from rich.cells import cell_len
from rich.console import Console
from textual.command import CommandPalette
from textual.widgets import Select, Static

import attn_tui
from attn_tui.ask.applies import applicable
from attn_tui.ask.options import SETTINGS
from attn_tui.ask.settings import RecordAsk
from attn_tui.present.positions import place_title
from attn_tui.tui.commands import setting_commands
from attn_tui.tui.stage_picker import stage_commands
from attn_tui.tui.widgets.model_pane import GREYABLE, LABELS, RECORDED, VARIANTS, ModelPane
from attn_tui.tui.widgets.toggle import ShapeCheckbox, ShapeRadioButton
from tests.sources.recorder import modules as m
from tests.tui.helpers import RecordingApp, run_from_palette, sample_app, searched, settle

SIZE = (120, 40)


def _text(widget) -> str:
    return str(widget.render())


def _rows(app) -> str:
    """The recorded rows as the terminal shows them (a Rich grid, so drawn by a console)."""
    console = Console(width=60, record=True, file=io.StringIO())
    console.print(app.query_one("#recorded", Static).content)
    return console.export_text()


def _recorded_trace():
    torch.manual_seed(0)
    module = m.MultiHeadAttention(8, 2)
    with attn_tui.record(tokens=["나는", "학교에", "간다"]) as rec:
        module(torch.randn(1, 3, 8))
    return rec.trace


async def test_a_checkbox_reads_on_and_off_in_its_shape_in_both_languages() -> None:
    app = sample_app("korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        box = app.query_one("#set-positional", ShapeCheckbox)
        assert not box.value and _text(box).startswith("[ ]")
        box.focus()
        await pilot.press("space")
        await settle(pilot)
        assert box.value and _text(box).startswith("[x]") and app.wanted.settings.positional
        await pilot.press("escape", "t")
        await pilot.pause()
        assert _text(box).startswith("[x]") and "sinusoidal" not in _text(box)  # the shape stays, the word is Korean
        teacher = app.query_one("#set-teacher", ShapeCheckbox)
        assert _text(teacher).startswith("[ ]")


async def test_the_export_dialogs_choices_read_on_and_off_in_their_shape() -> None:
    app = sample_app("korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await pilot.pause()
        stage, trace = (app.screen.query_one(f"#what-{name}", ShapeRadioButton) for name in ("stage", "trace"))
        assert _text(stage).startswith("(•)") and _text(trace).startswith("( )")
        await pilot.click(trace)
        await pilot.pause()
        assert _text(stage).startswith("( )") and _text(trace).startswith("(•)")  # the shape moves, not only colour


async def test_a_recorded_program_fills_the_model_pane_instead_of_the_variants_settings() -> None:
    trace = _recorded_trace()
    app = RecordingApp(record=RecordAsk().keeping(trace))
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pane = app.query_one(ModelPane)
        assert pane.has_class("-recorded") and app.query_one("#set-model", Select).value == RECORDED
        rows = _rows(app)
        weights = trace.stage("weights", head=0, step=None)
        assert f"MultiHeadAttention ({trace.meta.kinds[0]})" in rows and "modules.py:" in rows and "F.softmax" in rows
        assert "(a notebook or a session)" in rows and "heads    2" in rows  # values at cell 9, as the setting rows
        assert f"A {weights.shape[0]}×{weights.shape[1]}" in rows and "나는 학교에 간다" in rows
        assert not app.query_one("#row-variant").display and not app.query_one("#row-mask").display
        assert "MultiHeadAttention" in _text(app.query_one("#tokens"))  # not the variants' sentence's tokens
        await pilot.press("t")
        await pilot.pause()
        assert "코드" in _rows(app) and "MultiHeadAttention" in _text(app.query_one("#tokens"))
        assert f"호출 {trace.meta.calls[0]}회" in " ".join(_rows(app).split())  # never 호출 1번 호출
        labels = {line.split()[0]: line for line in _rows(app).splitlines() if line.strip()}
        assert all(cell_len(labels[k][:labels[k].index(labels[k].split()[1])]) == 9 for k in ("파일", "코드", "호출"))
        await pilot.press("t")
        app.query_one("#set-model", Select).value = VARIANTS  # leave it for the variants
        await settle(pilot)
        assert not pane.has_class("-recorded") and app.trace is not trace and app.query_one("#row-variant").display
        assert RECORDED not in [value for _label, value in app.query_one("#set-model", Select)._options]
        await pilot.press("ctrl+z")  # the recorded trace comes back, and its rows with it
        await settle(pilot)
        assert app.trace is trace and pane.has_class("-recorded")


async def test_the_head_and_layer_rows_count_from_zero_and_say_of() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert _text(app.query_one("#head-view")).startswith(f"0 of {app.trace.heads}")
        assert _text(app.query_one("#head-view")).endswith("press [ ]")  # after "press": never an unticked box
        assert _text(app.query_one("#layer-view")).endswith("press { }")
        assert "counted from 0" in str(app.query_one("#row-head").tooltip)
        await pilot.press("t")
        await pilot.pause()
        assert _text(app.query_one("#head-view")).startswith(f"0 (전체 {app.trace.heads})")
        assert _text(app.query_one("#head-view")).endswith("단축키 [ ]")


async def test_the_inspector_names_the_head_and_step_it_explains() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_place(next(n for n, p in enumerate(app.explorer.places) if p.name == "weights"))
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.view.head == 1 and _text(app.query_one("#inspector")).startswith("Cell head 1 · ")
        await pilot.press("t")
        await pilot.pause()
        assert _text(app.query_one("#inspector")).startswith("칸 헤드 1 · ")
        await pilot.press("t")
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        places = app.explorer.places
        app.explorer.go_to_place(next(n for n, p in enumerate(places) if p.step == 2))
        await settle(pilot)
        assert "tile 2 · " in _text(app.query_one("#inspector")).splitlines()[0]


async def test_the_stage_bar_numbers_the_tenth_stage_10_and_says_its_key_is_0() -> None:
    app = sample_app("note_001_masked")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        bar = _text(app.query_one("#stage-bar")).splitlines()[0]
        assert len(app.explorer.stage_names()) > 10 and "10·" in bar and "11·" in bar
        assert " 0·" not in bar and "press 0 for stage 10" in _text(app.query_one("#stage-bar"))
        await pilot.press("0")
        await settle(pilot)
        assert app.explorer.stage_index == 9


@pytest.mark.parametrize("width", [90, 104, 118, 132, 160])
async def test_the_bar_s_hints_never_wrap_in_two(width: int) -> None:
    """At any width a hint is whole on one line: beside the stages where it fits, else on a line of its own."""
    app = sample_app("note_001_masked")
    async with app.run_test(size=(width, 40)) as pilot:
        await settle(pilot)
        bar = app.query_one("#stage-bar")
        lines = [line.plain.strip() for line in bar.render().wrap(bar.content_region.width)]
        hint = "press 0 for stage 10"
        assert sum(hint in line for line in lines) == 1, lines
        assert not any(line.endswith(("press", "press 0", "for stage")) or line.startswith(("stage 10", "0 for"))
                       for line in lines), lines


async def test_slash_opens_a_picker_that_reaches_every_place_of_a_long_bar() -> None:
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        places = app.explorer.places
        assert len(places) > len(app.explorer.stage_names())
        assert "press / for any stage" in _text(app.query_one("#stage-bar"))
        commands = stage_commands(app.explorer)
        assert len(commands) == len(places)
        assert [c.name for c in commands] == [place_title(app.trace, p) for p in places]
        assert "tile 0 · tile_scores" in [c.name for c in commands]  # tiles counted from 0
        await pilot.press("slash")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"tile 2 · rescale")
        await searched(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert (app.view.name, app.view.step) == ("rescale", 2)
        assert "key tile 2 of 3" in _text(app.query_one("#stage-bar"))


async def test_the_picker_says_what_each_step_is() -> None:
    """Each stepped place's help is its step's own label: the tile's keys (in Korean too), beside the digit."""
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        helps = {c.name: c.help_text for c in stage_commands(app.explorer)}
        keys = app.trace.step_axis.items[2].new_keys
        assert helps["tile 2 · rescale"] == f"tile 2 (keys 6–{5 + len(keys)})"
        assert helps["embedding"] is None or "tile" not in helps["embedding"]
        await pilot.press("t")
        await settle(pilot)
        helps = {c.name: c.help_text for c in stage_commands(app.explorer)}
        assert any(h is not None and h.startswith("타일 2 (키 6–") for h in helps.values())


async def test_a_bar_the_digits_cover_makes_no_mention_of_the_picker() -> None:
    app = sample_app("korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert len(app.explorer.places) == len(app.explorer.stage_names()) <= 10
        assert "press / for any stage" not in _text(app.query_one("#stage-bar"))
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"scaled")
        await searched(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert app.view.name == "scaled"


async def test_the_palette_changes_settings_generated_from_their_declaration() -> None:
    app = sample_app("korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        titles = [title for title, _run, _help in setting_commands(app)]
        assert "Set mask: causal" in titles and "Set pos enc: on" in titles and "Type temp…" in titles
        assert "Set variant: scaled_dot" not in titles  # the value it has now is not offered
        used = applicable(app.variants)
        offered = [name for name in SETTINGS if name not in GREYABLE or name in used]
        assert "heads" not in offered and len(offered) >= 9  # scaled_dot has one head: greyed, not offered
        for name in offered:  # every setting that applies has a command, named by its pane label
            assert any(title.startswith((f"Set {LABELS[name]}: ", f"Type {LABELS[name]}…")) for title in titles), name
        await run_from_palette(pilot, "set mask: causal")
        await settle(pilot)
        assert app.wanted.settings.mask == "causal" and app.trace.meta.settings.mask == "causal"
        assert app.query_one("#set-mask", Select).value == "causal"
        await run_from_palette(pilot, "type temp")
        assert app.focused is app.query_one("#set-temperature")


async def test_the_palette_opens_the_stage_picker_too() -> None:
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await run_from_palette(pilot, "stage picker")
        await pilot.pause()
        assert isinstance(app.screen, CommandPalette)
        await pilot.press(*"tile 0 · accumulator")
        await searched(pilot)
        await pilot.press("enter")
        await pilot.pause()
        assert (app.view.name, app.view.step) == ("accumulator", 0)


async def test_a_legend_wider_than_80_columns_wraps_instead_of_losing_its_end() -> None:
    app = sample_app("luong_padding_note")
    async with app.run_test(size=(80, 40)) as pilot:
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        legend = app.query_one("#legend", Static)
        lines = [line.text.rstrip() for line in legend.render_lines(legend.region.reset_offset)]
        assert legend.size.height == 2 and "masked" in _text(legend)
        assert "".join(lines).endswith("blocked") or lines[-1].endswith("blocked")  # the convention's end is on show
