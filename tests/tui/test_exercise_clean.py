"""A new exercise starts clean: typed matrices drop the last exercise's mask, samples set every setting."""

from __future__ import annotations

import pytest
import torch
from textual.widgets import Checkbox, OptionList, TabbedContent, TextArea

from attn_tui.ask.samples import load_samples
from attn_tui.attention.engine import compute
from attn_tui.tui.widgets.stage_bar import StageBar
from tests.tui.helpers import sample_app, settle

SIZE = (100, 32)
NOTE_Q, NOTE_K, NOTE_V = "0 10 0", "10 0 0\n0 10 0\n0 0 10\n0 0 10", "1 0\n10 0\n100 5\n1000 6"  # note 002


async def _type(pilot, q: str, k: str, v: str) -> None:
    app = pilot.app
    app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
    for name, text in (("Q", q), ("K", k), ("V", v)):
        app.query_one(f"#edit-{name}", TextArea).text = text
        await pilot.pause()
    await settle(pilot)


def _rounded(tensor: torch.Tensor) -> list[list[float]]:
    return [[round(x, 4) + 0.0 for x in row] for row in tensor.tolist()]


def _stage_bar(app) -> str:
    return str(app.query_one(StageBar).render())


async def test_typed_lookup_after_a_causal_padding_exercise_starts_with_no_mask() -> None:
    app = sample_app("korean_padded", mask="causal+padding")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "≠ defaults: mask causal+padding" in _stage_bar(app)
        await _type(pilot, NOTE_Q, NOTE_K, NOTE_V)
        assert app.trace.meta.settings.mask == "none"
        assert _rounded(app.trace.tensor("weights")) == [[0.0, 1.0, 0.0, 0.0]]  # the note's lookup, not [1, 0, 0, 0]
        assert _rounded(app.trace.tensor("output")) == [[10.0, 0.0]]
        assert app.query_one("#set-mask").value == "none"
        notice = app.notices[-1]
        assert notice.title == "a new exercise starts clean" and "was causal+padding" in notice.message
        assert "≠ defaults" not in _stage_bar(app)
        # ctrl+z keeps the mask for these matrices: the numbers change, and the warning says the mask means nothing
        app.query_one("#edit-Q", TextArea).blur()
        await pilot.press("ctrl+z")
        await settle(pilot)
        assert app.trace.meta.settings.mask == "causal+padding" and app.query_one("#set-mask").value == "causal+padding"
        assert _rounded(app.trace.tensor("weights")) == [[1.0, 0.0, 0.0, 0.0]]
        assert app.query_one("#edit-K", TextArea).text == NOTE_K  # what was typed stays
        assert "mask means nothing for 1 × 4 scores" in app.error
        assert "≠ defaults: mask causal+padding" in _stage_bar(app)


async def test_keep_the_mask_checkbox_keeps_it_and_the_warning_names_it() -> None:
    app = sample_app("korean", mask="causal")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
        await pilot.pause()
        await pilot.click("#keep-mask")
        await pilot.pause()
        assert app.query_one("#keep-mask", Checkbox).value is True
        await _type(pilot, NOTE_Q, NOTE_K, NOTE_V)
        assert app.trace.meta.settings.mask == "causal"
        assert _rounded(app.trace.tensor("weights")) == [[1.0, 0.0, 0.0, 0.0]]
        assert "the causal mask means nothing for 1 × 4 scores" in app.error
        assert not any(n.title == "a new exercise starts clean" for n in app.notices)


async def test_editing_values_of_the_same_shapes_keeps_the_mask() -> None:
    app = sample_app("luong_general")  # typed 2 × 4 with a padding mask on the last key
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#edit-V", TextArea).text = "1 0\n0 1\n0.5 0.5\n7 7"  # new values, same shapes: an edit
        await pilot.pause()
        await settle(pilot)
        assert app.trace.meta.settings.mask == "padding" and app.trace.meta.settings.pad_keys == 1
        assert app.trace.tensor("output")[0].tolist() != [7.0, 7.0]


@pytest.mark.parametrize("name", ["note_000_dot", "note_001_masked", "note_002_lookup", "note_004_bahdanau"])
async def test_a_note_sample_after_any_other_exercise_gives_the_notes_numbers(name: str) -> None:
    """Every setting an earlier exercise changed is replaced: the app's numbers equal a fresh computation."""
    app = sample_app("korean_padded", mask="causal+padding", mask_fill="-1e9", temperature=3.0, positional=True,
                     seed=7, dim=6, dtype="float64")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#input-tabs", TabbedContent).active = "tab-samples"
        options = app.query_one("#sample-list", OptionList)
        options.focus()
        options.highlighted = list(load_samples()).index(name)
        await pilot.press("enter")
        await settle(pilot)
        fresh = compute(load_samples()[name].request)
        assert app.trace.meta.settings == fresh.meta.settings
        for stage in ("weights", "output"):
            assert torch.equal(app.trace.tensor(stage), fresh.tensor(stage)), stage
        if name == "note_002_lookup":
            assert _rounded(app.trace.tensor("weights")) == [[0.0, 1.0, 0.0, 0.0]]
            assert _rounded(app.trace.tensor("output")) == [[10.0, 0.0]]
        assert app.view.name == "weights" or name == "note_000_dot"


async def test_typed_nan_is_named_with_its_line_and_column() -> None:
    app = sample_app("korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        trace = app.trace
        await _type(pilot, "0 10 0\n1 nan 0", NOTE_K, NOTE_V)
        error = str(app.query_one("#error-Q").render())
        assert error == "✗ Q, line 2, column 3: nan is not a finite number: every number must be finite"
        assert str(app.query_one("#matrix-status").render()) == error
        assert app.trace is trace  # the last valid result stays
        assert app.query_one("#edit-Q", TextArea).text == "0 10 0\n1 nan 0"
