"""A Pilot test for every control of the model pane: each change recomputes and repaints."""

from __future__ import annotations

import math

import pytest
import torch
from textual.widgets import Checkbox, Input, Select

from attn_tui.tui.widgets.heatmap import Heatmap
from tests.tui.helpers import sample_app, settle

SIZE = (100, 32)


async def _change(pilot, selector: str, value) -> None:
    widget = pilot.app.query_one(selector)
    widget.value = value
    await pilot.pause()
    await settle(pilot)


@pytest.mark.parametrize("variant", ["dot", "scaled_dot", "general", "additive", "concat", "multihead"])
async def test_variant_select(variant: str) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-variant", variant)
        assert app.trace.meta.title == variant
        assert app.explorer.stage_names()[-1] == ("projected" if variant == "multihead" else "output")
        assert app.query_one(Heatmap).grid is app.view.grid


async def test_dim_input_and_invalid_text_kept() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-dim", "4")
        assert app.trace.tensor("embedding").shape == (3, 4)
        app.query_one("#set-dim", Input).value = "0"
        await pilot.pause()
        assert app.wanted.settings.dim == 4 and not app.workers._workers  # not applied, nothing computed
        assert "at least 1" in str(app.query_one("#settings-error").render())
        assert app.query_one("#set-dim", Input).value == "0"  # nothing typed is discarded


async def test_heads_input() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-heads", "2")
        assert app.trace.heads == 2
        await _change(pilot, "#set-heads", "3")  # 16 is not divisible by 3: an error, last trace kept
        assert app.trace.heads == 2 and "does not divide" in app.error


async def test_a_refused_field_holds_every_edit_until_it_reads_right() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown_heads, seed = app.trace.heads, app.wanted.settings.seed
        heads = app.query_one("#set-heads", Input)
        for text in ("1", "10", "100"):  # typed fast: "10" is asked for before "100" is refused
            heads.value = text
        await pilot.pause()
        await settle(pilot)
        assert "at most 64" in app.error and "does not divide" not in app.error  # the prefix's answer is dropped
        assert app.trace.heads == shown_heads
        await _change(pilot, "#set-seed", str(seed + 5))  # held: computing now would use heads 10, not what is shown
        assert app.wanted.settings.seed == seed and "at most 64" in app.error
        await _change(pilot, "#set-heads", "2")
        assert app.trace.heads == 2 and app.wanted.settings.seed == seed + 5 and "✗" not in app.error


async def test_head_view_label_follows_brackets() -> None:
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "0 of 4" in str(app.query_one("#head-view").render())
        await pilot.press("right_square_bracket")
        assert "1 of 4" in str(app.query_one("#head-view").render())


@pytest.mark.parametrize("mask", ["none", "causal", "padding", "causal+padding"])
async def test_mask_select(mask: str) -> None:
    app = sample_app("korean_padded", mask="none")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-mask", mask)
        masked = app.trace.tensor("masked")
        hidden = int(torch.isinf(masked).sum())
        expected = {"none": 0, "causal": 15, "padding": 18, "causal+padding": 21}[mask]
        assert hidden == expected


async def test_mask_fill_select() -> None:
    app = sample_app("korean_padded")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-mask_fill", "-1e9")
        assert float(app.trace.tensor("masked").min()) == -1e9
        await pilot.press("7")
        assert app.view.grid.is_masked(0, 5)


async def test_positional_checkbox() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-positional", True)
        assert "positional" in app.explorer.stage_names() and "embedded_pos" in app.explorer.stage_names()
        assert app.query_one("#set-positional", Checkbox).value


async def test_temperature_input_typed() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        field = app.query_one("#set-temperature", Input)
        field.focus()
        field.value = ""
        await pilot.press("2")
        await settle(pilot)
        assert app.trace.meta.settings.temperature == 2.0
        expected = app.trace.tensor("scaled") / 2
        assert torch.allclose(app.trace.tensor("masked"), expected)


async def test_seed_input() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        before = app.trace.tensor("embedding").clone()
        await _change(pilot, "#set-seed", "7")
        assert app.trace.meta.settings.seed == 7
        assert not torch.equal(before, app.trace.tensor("embedding"))


async def test_device_select_cpu_and_cuda_fallback() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-device", "cpu")
        assert app.trace.device == "cpu"
        if torch.cuda.is_available():
            return
        await _change(pilot, "#set-device", "cuda")
        assert app.trace.device == "cpu"
        assert "CPU instead" in app.error
        assert any("CUDA" in (n.title or "") for n in app.notices)
        assert "cpu" in str(app.query_one("#device-used").render())


@pytest.mark.parametrize("dtype", ["float64", "float16", "bfloat16"])
async def test_dtype_select(dtype: str) -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await _change(pilot, "#set-dtype", dtype)
        assert str(app.trace.tensor("scores").dtype) == f"torch.{dtype}"
        weights = app.trace.tensor("weights")
        assert math.isclose(float(weights[0].sum()), 1.0, rel_tol=1e-3)


async def test_selects_are_compact_one_liners() -> None:
    app = sample_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        shown = [select for select in app.query(Select) if select.parent.display]  # rows of this kind of model
        assert len(shown) >= 5 and all(select.size.height == 1 for select in shown)
