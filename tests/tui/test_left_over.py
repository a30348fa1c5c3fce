"""Nothing from an earlier exercise stays on screen once it no longer applies: the matrices while a model reads
the sentence, an editor's error once the sentence is back in front, the mask a custom mask adds to the mask row."""

from __future__ import annotations

from textual.widgets import Input, TabbedContent, TextArea

from tests.tui.helpers import sample_app, settle

SIZE = (120, 40)


def _text(app, selector: str) -> str:
    return str(app.query_one(selector).render())


async def test_a_model_reading_the_sentence_sets_the_typed_matrices_aside_and_says_so() -> None:
    app = sample_app("note_004_bahdanau")  # its Q, K, V are typed in the Matrices tab
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        tabs = app.query_one("#input-tabs", TabbedContent)
        assert tabs.active == "tab-matrices" and not app.query_one("#matrices").has_class("-idle")
        app.editing.choose_model("seq2seq-dates")
        await settle(pilot)
        assert tabs.active == "tab-sentence"  # what the model reads comes forward
        assert app.query_one("#matrices").has_class("-idle")
        assert "a model reads the sentence" in _text(app, "#matrix-status")
        assert app.query_one("#edit-Q", TextArea).text.strip()  # kept as typed, for the variants
        app.editing.choose_model(None)
        await settle(pilot)
        assert not app.query_one("#matrices").has_class("-idle")
        assert "a model reads" not in _text(app, "#matrix-status")


async def test_an_editor_s_error_leaves_the_error_line_once_the_sentence_is_back_in_front() -> None:
    app = sample_app("korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        app.action_jump("#edit-Q")
        await pilot.pause()
        app.query_one("#edit-Q", TextArea).text = "1 2\n3 x"
        await settle(pilot)
        assert app.error.startswith("✗ Q, line 2, column 3") and "showing the last valid result" in app.error
        app.action_jump("#sentence")
        await settle(pilot)
        assert app.error == ""
        assert "✗" in _text(app, "#matrix-status")  # the Matrices tab still says it, over its editors
        assert " ".join(app.trace.query_tokens) in app.query_one("#sentence", Input).value  # the sentence's result


async def test_the_mask_row_says_what_a_custom_mask_adds() -> None:
    app = sample_app("embedding_table")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert not app.query_one("#custom-mask").display
        await pilot.press("5", "down", "shift+right", "shift+right", "x")  # cell (1, 2) of the masked stage
        await settle(pilot)
        assert app.variants.settings.mask == "none" and app.variants.custom_mask is not None
        assert app.query_one("#custom-mask").display
        assert _text(app, "#custom-mask") == "+ 1 cell masked by hand (x on the masked stage)"
        await pilot.press("t")
        await pilot.pause()
        assert _text(app, "#custom-mask") == "+ 직접 마스크한 칸 1개 (masked 단계에서 x)"
        await pilot.press("t", "x")  # unmasked again: the custom mask goes, and the line with it
        await settle(pilot)
        assert not app.query_one("#custom-mask").display


async def test_a_sample_s_own_words_stay_under_the_stage_bar_while_it_is_on_show() -> None:
    from attn_tui.ask.samples import load_samples
    from tests.tui.helpers import RecordingApp

    app = RecordingApp(load_samples()["note_000_dot"].request, sample="note_000_dot")  # `--sample note_000_dot`
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        assert "As in note 000" in _text(app, "#stage-bar") and "not its digits" in _text(app, "#stage-bar")
        await pilot.press("t")
        await settle(pilot)
        assert "노트 000처럼" in _text(app, "#stage-bar")
        await pilot.press("t")
        app.editing.set_setting("temperature", 2.0)  # another exercise now: the note's words no longer apply
        await settle(pilot)
        assert "note 000" not in _text(app, "#stage-bar")
        app.editing.set_setting("temperature", 1.0)  # the sample's own ask again
        await settle(pilot)
        assert "As in note 000" in _text(app, "#stage-bar")
        app.editing.load_sample("note_004_bahdanau")
        await settle(pilot)
        assert "As in note 004" in _text(app, "#stage-bar") and "note 000" not in _text(app, "#stage-bar")
