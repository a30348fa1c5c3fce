"""The learner's path: every token labelled, masks shaped by hand, named rows, focus keys, greyed settings."""

from __future__ import annotations

from textual.widgets import Input, TabbedContent, TextArea

from attn_tui.render.heatmap import CURSOR_LABEL_STYLE, PAD_LABEL_STYLE
from attn_tui.tui.widgets.heatmap import Heatmap
from tests.tui.helpers import sample_app, settle

SIZE = (110, 34)


def _header_texts(heatmap: Heatmap) -> list[str]:
    return [heatmap.render_line(y).text for y in range(heatmap.layout_info.header_height)]


async def test_every_row_and_the_cursors_column_are_labelled_in_colour_mode() -> None:
    app = sample_app("long_paragraph")
    async with app.run_test(size=(90, 30)) as pilot:
        await settle(pilot)
        await pilot.press("8")  # weights of 70-odd tokens: colour cells
        heatmap = app.query_one(Heatmap)
        assert not heatmap.layout_info.show_values
        tokens = app.trace.query_tokens
        for _ in range(5):
            await pilot.press("shift+right")
        _row, col = app.cursor
        header = "".join(_header_texts(heatmap))
        assert tokens[col][:12] in header  # the cursor's column, however crowded the header is
        lay = heatmap.layout_info
        for y in range(lay.header_height, lay.header_height + 6):
            label = heatmap.render_line(y).text[:lay.label_width].strip()
            assert label == tokens[y - lay.header_height + heatmap.scroll_offset.y][:lay.label_width - 1].strip() \
                or label.endswith("…")
        cursor_labels = [seg for y in range(lay.header_height) for seg in heatmap.render_line(y)
                         if seg.style == CURSOR_LABEL_STYLE]
        assert cursor_labels


async def test_stage_bar_names_are_clickable() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(4)")  # what a click on the fifth name runs
        await pilot.pause()  # the stage is read off the event loop, and drawn when it arrives
        assert app.view.name == app.explorer.stage_names()[4] == "scores"


async def test_opens_at_the_first_stage_or_the_samples_own() -> None:
    from attn_tui.ask.samples import load_samples
    from tests.tui.helpers import RecordingApp

    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.explorer.stage_index == 0 and app.view.name == "embedding"
    sample = load_samples()["padded_rows"]
    app = RecordingApp(sample.request, first_stage=sample.stage)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.view.name == "masked"


async def test_x_masks_and_unmasks_a_cell_and_the_inspector_says_why() -> None:
    app = sample_app("embedding_table")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("5")  # masked (dot has no scaled stage)
        assert app.view.name == "masked" and app.trace.mask is None
        await pilot.press("down", "shift+right", "shift+right", "x")  # cell (1, 2)
        await settle(pilot)
        assert app.variants.custom_mask[1][2] == 0.0 and app.view.grid.is_masked(1, 2)
        inspector = str(app.query_one("#inspector").render())
        assert "custom" in inspector and "replaced by the fill -inf" in inspector
        weights = app.trace.tensor("weights")
        assert float(weights[1, 2]) == 0.0 and abs(float(weights[1].sum()) - 1) < 1e-6
        await pilot.press("x")  # unmask again: the custom mask goes
        await settle(pilot)
        assert app.variants.custom_mask is None and not app.view.grid.is_masked(1, 2)
        await pilot.press("ctrl+z")  # undo the unmasking
        await settle(pilot)
        assert app.variants.custom_mask[1][2] == 0.0


async def test_x_on_a_cell_the_mask_kind_hides_explains_and_changes_nothing() -> None:
    app = sample_app("english_causal")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await app.run_action("stage(8)")
        await pilot.pause()
        assert app.view.name == "masked"
        await pilot.press("shift+right", "x")  # (0, 1): a future key under the causal mask
        assert app.variants.custom_mask is None
        assert any("future key" in n.message for n in app.notices)
        await pilot.press("1", "x")
        assert any("masked stage" in n.message for n in app.notices)


async def test_pad_keys_control_masks_the_last_keys_and_strikes_their_labels() -> None:
    app = sample_app("lookup", mask="padding")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        pad = app.query_one("#set-pad_keys", Input)
        assert not pad.disabled
        pad.value = "1"
        await pilot.pause()
        await settle(pilot)
        assert app.trace.meta.settings.pad_keys == 1
        await app.run_action("stage(5)")  # masked
        await pilot.pause()
        heatmap = app.query_one(Heatmap)
        assert heatmap.grid.pad_cols == frozenset({3}) and heatmap.grid.is_masked(0, 3)
        header = [seg for seg in heatmap.render_line(0) if seg.style == PAD_LABEL_STYLE]
        assert header and "k3" in header[0].text


async def test_settings_that_do_not_apply_are_greyed_out() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert app.query_one("#set-heads").disabled and app.query_one("#row-heads").has_class("-unused")
        assert app.query_one("#set-pad_keys").disabled and app.query_one("#set-mask_fill").disabled
        assert not app.query_one("#set-projection").disabled
        app.editing.set_setting("variant", "multihead")
        await settle(pilot)
        assert not app.query_one("#set-heads").disabled and app.query_one("#set-projection").disabled


async def test_focus_keys_jump_to_the_sentence_the_editors_and_the_model_pane() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("i")
        assert app.focused is app.query_one("#sentence", Input)
        await pilot.press("escape", "X")
        assert app.focused is app.query_one("#edit-X", TextArea)
        assert app.query_one("#input-tabs", TabbedContent).active == "tab-matrices"
        await pilot.press("escape", "Q")
        assert app.focused is app.query_one("#edit-Q", TextArea)
        await pilot.press("escape", "m")
        assert app.focused is app.query_one("#set-variant")


async def test_named_rows_of_x_label_the_axes_for_any_variant() -> None:
    app = sample_app(variant="dot")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("X")
        await pilot.press(*"나는: 1 0 1 0", "enter", *"학교에: 0 1 0 1", "enter", *"간다: 1 1 0 0")
        await settle(pilot)
        assert app.trace.query_tokens == ("나는", "학교에", "간다") and app.trace.meta.variant == "dot"
        assert "✓ X 3×4" in str(app.query_one("#matrix-status").render())


async def test_identity_projection_runs_on_exactly_the_typed_table() -> None:
    import torch

    app = sample_app("embedding_table")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        x = app.trace.inputs["X"]
        assert torch.equal(app.trace.tensor("query"), x) and torch.equal(app.trace.tensor("key"), x)
        assert torch.allclose(app.trace.tensor("scores"), x @ x.T)
        app.query_one("#set-projection").value = "learned"
        await settle(pilot)
        assert "W_q" in app.trace.params and not torch.equal(app.trace.tensor("query"), x)


async def test_the_status_line_agrees_with_a_shape_clash() -> None:
    app = sample_app("lookup")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.query_one("#edit-K", TextArea).text = "1 0\n0 1\n1 1\n0 0"
        await pilot.pause()
        await settle(pilot)
        status = str(app.query_one("#matrix-status").render())
        assert status.startswith("✗") and "last dimensions must match" in status
        assert "last dimensions must match" in app.error
