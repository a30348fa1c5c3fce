"""The mask convention in the app: the "1 means" row, the legend, the inspector, and x that writes as typed."""

from __future__ import annotations

import runpy
from dataclasses import replace

from textual.widgets import Select, Static

import attn_tui
from attn_tui.ask.samples import load_samples, samples_dir
from attn_tui.ask.settings import MatrixInput, RecordAsk, VariantAsk
from attn_tui.tui.messages import SourceEdited
from tests.tui.helpers import RecordingApp, sample_app, settle

SIZE = (120, 40)


def _text(app: RecordingApp, selector: str) -> str:
    return str(app.query_one(selector).render())


async def _to_masked(pilot, *keys: str) -> None:
    await settle(pilot)
    pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("masked"))
    if keys:
        await pilot.press(*keys)
    await pilot.pause()


async def test_the_notes_sample_shows_its_convention_and_the_row_switches_it() -> None:
    app = sample_app("luong_padding_note")
    async with app.run_test(size=SIZE) as pilot:
        await _to_masked(pilot, "shift+right", "shift+right", "shift+right")
        assert app.cursor == (0, 3)
        row = app.query_one("#row-mask_means")
        assert row.display and not row.has_class("-unused")
        assert app.query_one("#set-mask_means", Select).value == "block"
        assert "typed 1 = blocked" in _text(app, "#legend")
        assert "typed the other way round from torch" in _text(app, "#explanation")
        inspector = _text(app, "#inspector")
        assert "mask[0,3] = 0" in inspector and "holds 1 here (1 = blocked)" in inspector
        assert float(app.trace.tensor("weights")[0, 3]) == 0.0
        app.query_one("#set-mask_means", Select).value = "attend"  # the same typed 0 0 0 1, read the SDPA way
        await settle(pilot)
        assert app.variants.settings.mask_means == "attend" and app.variants.custom_mask == [[0, 0, 0, 1]]
        assert float(app.trace.tensor("weights")[0, 3]) == 1.0
        assert any("--mask-means block" in str(w) for w in app.trace.warnings)
        assert "1 = blocked" not in _text(app, "#legend")
        assert "The mask here follows torch" in _text(app, "#explanation")


async def test_the_row_is_hidden_without_a_custom_mask() -> None:
    app = sample_app("korean_padded")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        row = app.query_one("#row-mask_means")
        assert row.has_class("-unused") and not row.region.height
        assert app.query_one("#set-mask_means", Select).disabled


async def test_x_writes_the_mask_as_typed_and_spreads_a_row_per_key_over_the_queries() -> None:
    sample = load_samples()["korean"].request
    app = RecordingApp(VariantAsk(sample.source, replace(sample.settings, mask_means="block"), [[0.0, 0.0, 1.0]]))
    async with app.run_test(size=SIZE) as pilot:
        await _to_masked(pilot, "down", "x")  # cell (1, 0): masked by hand
        await settle(pilot)
        assert app.variants.custom_mask == [[0.0, 0.0, 1.0], [1.0, 0.0, 1.0], [0.0, 0.0, 1.0]]  # 1 = blocked
        assert any("kept as typed: 1 = blocked" in n.message for n in app.notices)
        weights = app.trace.tensor("weights")
        assert float(weights[1, 0]) == 0.0 and float(weights[0, 2]) == 0.0 and float(weights[0, 0]) > 0
        await pilot.press("x")  # unmask it again: back to 0, as the note writes a key that may be seen
        await settle(pilot)
        assert app.variants.custom_mask is not None and app.variants.custom_mask[1] == [0.0, 0.0, 1.0]


async def test_a_hand_mask_after_the_notes_mask_went_follows_torch_and_says_nothing_was_typed() -> None:
    app = sample_app("luong_padding_note")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        rows = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]  # 3 keys: the 1×4 mask no longer fits
        app.post_message(SourceEdited(MatrixInput([[0.5, -1.0, 0.25, 1.0]], rows, rows)))
        await settle(pilot)
        assert app.variants.custom_mask is None and app.variants.settings.mask_means == "attend"
        assert app.query_one("#set-mask_means", Select).value == "attend"
        await _to_masked(pilot, "x")  # cell (0, 0) masked by hand: written the way torch reads it
        await settle(pilot)
        assert app.variants.custom_mask == [[0.0, 1.0, 1.0]] and app.variants.mask_by_hand
        assert float(app.trace.tensor("weights")[0, 0]) == 0.0
        assert "1 = blocked" not in _text(app, "#legend")
        assert "typed the other way round" not in _text(app, "#explanation")
        assert not any("kept as typed" in n.message for n in app.notices)


def recorded_note() -> attn_tui.Trace:
    with attn_tui.record() as rec:
        runpy.run_path(str(samples_dir() / "scripts" / "luong_padding.py"))
    return rec.trace


async def test_a_traced_program_shows_its_own_mask_beside_the_may_attend_view() -> None:
    app = RecordingApp(record=RecordAsk().keeping(recorded_note()))
    async with app.run_test(size=SIZE) as pilot:
        await _to_masked(pilot, "shift+right", "shift+right", "shift+right")
        assert app.cursor == (0, 3)
        inspector = _text(app, "#inspector")
        assert "mask[0,3] = 0   (1 = may attend)" in inspector
        assert "your code's mask holds True here → filled with -inf (blocked)" in inspector
        assert "code: True → -∞" in str(app.query_one("#legend", Static).render())
        assert "your code's own mask value" in _text(app, "#explanation")
