"""`attn-tui --model NAME` alone opens on a sentence of the model's, and the app says which."""

from __future__ import annotations

from typing import Any

import pytest

from attn_tui.ask.samples import MODEL_SENTENCE, load_samples, sentence_for
from attn_tui.ask.settings import ModelAsk
from attn_tui.cli import commands
from attn_tui.cli.parser import parse
from attn_tui.i18n import Msg
from attn_tui.tui.app import AttnApp


def test_each_model_reads_its_own_sample_sentence_or_the_shared_one() -> None:
    samples = load_samples()
    assert sentence_for("minilm") == samples["minilm_it"].model.text  # type: ignore[union-attr]
    assert sentence_for("smollm2") == samples["smollm2_sink"].model.text  # type: ignore[union-attr]
    assert sentence_for("transformer-dates") == samples["dates_english"].model.text  # type: ignore[union-attr]
    assert sentence_for("/some/model/folder") == MODEL_SENTENCE


def test_model_alone_opens_the_app_on_that_sentence_and_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    opened: dict[str, Any] = {}
    monkeypatch.setattr("attn_tui.tui.app.run_app", lambda *args, **kwargs: opened.update(args=args, **kwargs) or 0)
    assert commands.app(parse(["--model", "seq2seq-dates"])) == 0
    model = opened["args"][1]
    assert isinstance(model, ModelAsk) and model.name == "seq2seq-dates" and model.text == sentence_for("seq2seq-dates")
    assert model.text in str(opened["notice"]) and "--text" in str(opened["notice"])
    opened.clear()
    assert commands.app(parse(["--model", "seq2seq-dates", "--text", "2026-12-07"])) == 0
    assert opened["notice"] is None and opened["args"][1].text == "2026-12-07"


async def test_the_app_says_the_notice_once_it_is_up() -> None:
    notice = Msg("no --text: {model} reads its sample sentence “{text}” (type another in the input pane)",
                 model="seq2seq-dates", text=sentence_for("seq2seq-dates"))
    app = AttnApp(model=ModelAsk("seq2seq-dates", sentence_for("seq2seq-dates")), notice=notice)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        assert [str(n.message) for n in app._notifications] == [str(notice)]
