"""Snapshots of what a newcomer working through the notes meets: a note's sample with its biases and its own words
under the stage bar, a traced decoder's steps × source, a model reading the sentence beside typed matrices set
aside, a custom mask named under the mask row, and the atlas's export dialog."""

from __future__ import annotations

import pytest
import torch
from textual.widgets import TabbedContent

import attn_tui
from attn_tui.ask.samples import load_samples
from attn_tui.ask.settings import RecordAsk
from tests.sources.recorder import modules as m
from tests.tui.helpers import RecordingApp, sample_app, settle

pytestmark = pytest.mark.slow

SIZE = (110, 34)


def test_note_004_with_its_biases_and_its_own_words(snap_compare) -> None:
    sample = load_samples()["note_004_bahdanau"]

    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index("energy"))
        await pilot.pause()

    assert snap_compare(RecordingApp(sample.request, sample="note_004_bahdanau"), terminal_size=SIZE,
                        run_before=run_before)


def test_a_traced_decoder_s_steps_by_source(snap_compare) -> None:
    torch.manual_seed(3)
    attention, keys = m.BahdanauAttention(4), torch.randn(1, 5, 4)
    with attn_tui.record(tokens=["<sos>"], key_tokens=["나는", "학교에", "간다", "오늘", "<eos>"]) as rec:
        for _ in range(4):
            attention(torch.randn(1, 1, 4), keys)

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("end", "g")
        await pilot.pause()

    assert snap_compare(RecordingApp(record=RecordAsk().keeping(rec.trace)), terminal_size=SIZE,
                        run_before=run_before)


def test_the_matrices_set_aside_while_a_model_reads_the_sentence(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.editing.choose_model("seq2seq-dates")
        await settle(pilot)
        pilot.app.query_one("#input-tabs", TabbedContent).active = "tab-matrices"
        await pilot.pause()

    assert snap_compare(sample_app("note_002_lookup"), terminal_size=SIZE, run_before=run_before)


def test_a_custom_mask_named_under_the_mask_row(snap_compare) -> None:
    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("5", "down", "shift+right", "shift+right", "x")
        await settle(pilot)
        pilot.app.clear_notifications()
        await pilot.pause()

    assert snap_compare(sample_app("embedding_table"), terminal_size=SIZE, run_before=run_before)


def test_the_atlas_export_dialog(snap_compare, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir("/")  # the dialog names the folder a bare name goes to: the same on every machine

    async def run_before(pilot) -> None:
        await settle(pilot)
        await pilot.press("a")
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()

    assert snap_compare(sample_app("korean", variant="multihead", heads=4), terminal_size=SIZE,
                        run_before=run_before)
