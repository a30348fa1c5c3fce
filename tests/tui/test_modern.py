"""The app on today's variants: stepping flash's key tiles, the gqa sharing view, the sink and the window."""

from __future__ import annotations

import torch
from rich.console import Console

from attn_tui.present.kv_sharing import kv_sharing
from attn_tui.render.kv_sharing import sharing_text
from attn_tui.tui.widgets.heads_grid import HeadsGrid
from attn_tui.tui.widgets.inspector import Inspector
from tests.tui.helpers import sample_app, settle

SIZE = (110, 34)


def _text(renderable: object) -> str:
    console = Console(width=200, record=True)
    console.print(renderable)
    return console.export_text()


async def test_stepping_flash_walks_every_tile_in_order_then_the_output() -> None:
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("home")
        seen = [(app.view.name, app.view.step)]
        while app.view.name != "output":
            await pilot.press("right")
            seen.append((app.view.name, app.view.step))
        per_tile = ["tile_scores", "running_max", "rescale", "denominator", "accumulator"]
        tiles = [(name, t) for t in range(3) for name in per_tile]
        assert seen == [("embedding", None), ("query", None), ("key", None), ("value", None), *tiles,
                        ("output", None)]


async def test_a_flash_tile_shows_its_keys_and_the_bar_lists_its_stages() -> None:
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        names = [p.name for p in app.explorer.places]
        app.explorer.go_to_place(names.index("running_max") + 5 * 1)  # tile 1's running max
        await pilot.pause()
        view = app.view
        assert (view.name, view.step) == ("running_max", 1)
        assert "tile_scores" in app.explorer.stage_names() and "output" in app.explorer.stage_names()
        caption = str(app.query_one("#stage-bar").render())
        assert "key tile 1 of 3" in caption  # counted from 0, as torch indexes and "keys 3…5" in caption
        trace = app.trace
        expected = torch.maximum(trace.tensor("running_max", step=0),
                                 trace.tensor("tile_scores", step=1).amax(-1, keepdim=True))
        assert torch.equal(trace.tensor("running_max", step=1), expected)
        app.explorer.go_to_place(names.index("running_max") + 5 * 2 + 1)  # tile 2's rescale
        await pilot.pause()
        assert (app.view.name, app.view.step) == ("rescale", 2)
        assert "exp(m_prev − m)" in str(app.query_one(Inspector).render())


async def test_g_on_flash_shows_the_stage_not_an_alignment() -> None:
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        assert app.explorer.panel == "heads"


async def test_the_heads_panel_of_gqa_shows_which_query_heads_share_a_key_value_head() -> None:
    app = sample_app("gqa_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.press("]", "]", "]", "]")  # query head 4: key/value head 1
        await pilot.press("g")
        await pilot.pause()
        grid = app.query_one(HeadsGrid)
        assert app.explorer.panel == "heads" and grid.extra is not None
        assert grid.titles == [f"head {h} · kv {h // 3}" for h in range(6)]
        text = _text(grid.extra)
        assert "6 query heads share 2 key/value heads" in text
        assert "key/value head 0  ◀   Q0   Q1   Q2" in text and "key/value head 1  ◀   Q3   Q4   Q5" in text
        caption = str(app.query_one("#stage-bar").render())
        assert "head 4 of 6" in caption and "reads key/value head 1" in caption


async def test_heads_of_one_group_draw_the_same_keys() -> None:
    app = sample_app("gqa_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        trace = app.trace
        assert torch.equal(trace.tensor("key", head=3), trace.tensor("key", head=5))
        assert not torch.equal(trace.tensor("key", head=2), trace.tensor("key", head=3))
        sharing = kv_sharing(trace, 3)
        assert sharing is not None and sharing.kv_of(3) == 1
        assert sharing_text(sharing).splitlines()[1:] == ["key/value head 0  ◀   Q0   Q1   Q2",
                                                          "key/value head 1  ◀   Q3   Q4   Q5"]


async def test_no_sharing_view_where_every_head_has_its_own_keys() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("g")
        await pilot.pause()
        assert app.query_one(HeadsGrid).extra is None


async def test_the_sink_sample_shows_the_window_and_the_sink() -> None:
    app = sample_app("sink_sliding_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.explorer.go_to_stage(app.explorer.stage_names().index("masked"))
        await pilot.pause()
        hidden = app.view.grid.masked_block(0, 9, 0, 9)
        expected = ~torch.tensor([[i - 3 < j <= i for j in range(9)] for i in range(9)])
        assert (hidden == expected.numpy()).all()
        app.explorer.go_to_stage(app.explorer.stage_names().index("weights"))
        await pilot.pause()
        assert "1 − p_sink" in app.view.note
        app.explorer.go_to_stage(app.explorer.stage_names().index("sink_mass"))
        await pilot.pause()
        assert app.view.grid.cols == 1 and app.view.grid.rows == 9


async def _change(pilot, selector: str, value: str) -> None:
    pilot.app.query_one(selector).value = value
    await pilot.pause()
    await settle(pilot)


def _shown(app, name: str) -> bool:
    row = app.query_one(f"#row-{name}")
    return row.display and not row.has_class("-unused")


async def test_each_variants_own_knob_shows_only_where_it_applies() -> None:
    app = sample_app()  # scaled_dot, no mask
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not any(_shown(app, n) for n in ("kv_heads", "rope_base", "tile", "window"))
        for variant, own in (("gqa", "kv_heads"), ("rope", "rope_base"), ("flash", "tile")):
            await _change(pilot, "#set-variant", variant)
            assert app.trace.meta.title == variant
            assert [n for n in ("kv_heads", "rope_base", "tile") if _shown(app, n)] == [own], variant
        await _change(pilot, "#set-mask", "sliding")
        assert _shown(app, "window")
        await _change(pilot, "#set-mask", "causal")
        assert not _shown(app, "window")


async def test_kv_heads_input_regroups_the_heads_and_refuses_what_does_not_divide() -> None:
    app = sample_app("gqa_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.meta.kv_map == (0, 0, 0, 1, 1, 1)
        await _change(pilot, "#set-kv_heads", "3")
        assert app.trace.meta.kv_map == (0, 0, 1, 1, 2, 2)
        await _change(pilot, "#set-kv_heads", "1")  # multi-query
        assert app.trace.meta.kv_map == (0,) * 6
        await _change(pilot, "#set-kv_heads", "4")  # 4 does not divide 6: the last trace stays
        assert app.trace.meta.kv_map == (0,) * 6 and "must divide --heads 6" in app.error
        app.query_one("#set-kv_heads").value = "0"
        await pilot.pause()
        assert app.wanted.settings.value("kv_heads") == 4 and not app.workers._workers  # refused: nothing asked
        assert "at least 1" in str(app.query_one("#settings-error").render())


async def test_window_tile_and_rope_base_inputs_recompute() -> None:
    app = sample_app("flash_tiles")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.trace.steps() == 3
        await _change(pilot, "#set-tile", "2")
        assert app.trace.steps() == 5 and app.trace.meta.settings.value("tile") == 2
        await _change(pilot, "#set-mask", "sliding")
        await _change(pilot, "#set-window", "2")
        allowed = app.trace.mask.allowed
        assert torch.equal(allowed, torch.tensor([[i - 2 < j <= i for j in range(9)] for i in range(9)]))
        await _change(pilot, "#set-variant", "rope")
        before = app.trace.tensor("query_rot")
        await _change(pilot, "#set-rope_base", "100")
        assert app.trace.meta.settings.value("rope_base") == 100.0
        assert not torch.equal(before, app.trace.tensor("query_rot"))
        app.query_one("#set-rope_base").value = "1"
        await pilot.pause()
        assert app.wanted.settings.value("rope_base") == 100.0 and not app.workers._workers  # refused: nothing asked
        assert "above 1" in str(app.query_one("#settings-error").render())
