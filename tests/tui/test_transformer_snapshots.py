"""Snapshots of the transformer date model: the encoder's self-attention, and a finished cross-attention alignment."""

from __future__ import annotations

import pytest

from tests.tui.helpers import model_app, settle

pytestmark = pytest.mark.slow

NAME, DATE = "transformer-dates", "26년 11월 22일 일요일"


def _at_stage(name: str, *keys: str):
    async def run_before(pilot) -> None:
        await settle(pilot)
        pilot.app.explorer.go_to_stage(pilot.app.explorer.stage_names().index(name))
        if keys:
            await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_transformer_encoder_self_attention(snap_compare) -> None:
    assert snap_compare(model_app(NAME, DATE, layer=1, head=0), terminal_size=(100, 32),
                        run_before=_at_stage("enc_attn.weights"))


def test_transformer_finished_cross_attention_alignment(snap_compare) -> None:
    assert snap_compare(model_app(NAME, DATE, layer=1, head=0), terminal_size=(100, 32),
                        run_before=_at_stage("cross_attn.alignment"))


def _side_by_side(*keys: str):
    async def run_before(pilot) -> None:
        from tests.tui.test_date_compare import _compare_models

        await settle(pilot)
        await _compare_models(pilot, "transformer-dates")
        await pilot.press(*keys)
        await pilot.pause()

    return run_before


def test_gru_and_transformer_side_by_side_halfway(snap_compare) -> None:
    """The GRU's Bahdanau alignment beside the transformer's last-layer cross-attention, five steps in."""
    app = model_app("seq2seq-dates", "Sunday, 22 Nov 2026")
    keys = ("home", *["right"] * 50, *["shift+right"] * 15)  # five steps of nine stages in; the cursor on the year
    assert snap_compare(app, terminal_size=(120, 40), run_before=_side_by_side(*keys))
