"""Every kind of run and ask answers the same questions, so views ask instead of testing types (issue 22, one door)."""

from __future__ import annotations

import re
from pathlib import Path

from attn_tui.ask.settings import MatrixInput, ModelAsk, RecordAsk, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.i18n import Msg
from attn_tui.trace.meta import DecoderRun, RecordedRun, TransformerRun, VariantRun

PACKAGE = Path(__file__).resolve().parents[2] / "attn_tui"
KINDS = (r"VariantAsk|ModelAsk|SentenceInput|MatrixInput|XInput|RecordAsk|VariantRun|TransformerRun|DecoderRun|"
         r"RecordedRun|Shown")
TESTED = re.compile(rf"isinstance\([^)]*\b({KINDS})\b")

VARIANT = VariantRun(settings=Settings(variant="flash"), kv_map=(0, 0))
MODEL = TransformerRun(model="bert-tiny", family="bert", layers=2, heads=2, scale=0.5, causal=False)
DECODE = DecoderRun(model="seq2seq-dates", attention="additive", input="1 may 2020", output="2020-05-01", steps=10,
                    target="2020-05-02", fed=("<s>",) * 10)
RECORDED = RecordedRun(script="mine.py", modules=("Attention",), threads=2)


def test_each_run_says_what_a_step_is_and_its_short_name() -> None:
    assert [str(meta.step_name(2)) for meta in (VARIANT, MODEL, DECODE, RECORDED)] == [
        str(Msg("tile {t}", t=2)), str(Msg("step {step}", step=2)), str(Msg("decoder step {t}", t=2)),
        str(Msg("step {step}", step=2))]
    assert [meta.short_title for meta in (VARIANT, MODEL, DECODE, RECORDED)] == ["flash", "bert-tiny",
                                                                               "seq2seq-dates", "mine.py: Attention"]


def test_each_run_hands_itself_over_only_as_what_it_is() -> None:
    for meta in (VARIANT, MODEL, DECODE, RECORDED):
        assert (meta.decoding is meta) == (meta is DECODE) and (meta.program is meta) == (meta is RECORDED)
        assert (meta.settings_of_variants is not None) == (meta is VARIANT)
    assert DECODE.missed(9, "1") and not DECODE.missed(9, "2") and not VARIANT.missed(0, "x")
    assert DECODE.attention_kind == "additive" and RECORDED.attention_kind == MODEL.attention_kind == ""
    assert VARIANT.kv_map == (0, 0) and MODEL.kv_map == DECODE.kv_map == () and RECORDED.threads == 2


def test_each_run_writes_its_own_export_header() -> None:
    assert VARIANT.header() | {"settings": None} == {"kind": "variant", "variant": "flash", "settings": None,
                                                     "vocab": None, "heads": 1, "kv_heads": 0, "kv_map": [0, 0]}
    assert MODEL.header()["kind"] == "transformer" and DECODE.header()["output"] == "2020-05-01"
    recorded = RECORDED.header()
    assert recorded["kind"] == "recorded" and "threads" not in recorded["settings"]  # how it ended is no setting


def test_each_ask_and_input_answers_the_same_questions() -> None:
    request = VariantAsk(SentenceInput("a b"), Settings(device="cuda"))
    model = ModelAsk("bert-tiny", "a b", device="cuda")
    assert [a.kind for a in (request, model, RecordAsk())] == ["variants", "model", "recorded"]
    assert request.on_device("cpu").device == model.on_device("cpu").device == "cpu"
    assert request.changed({"mask": "causal"}).settings.mask == "causal" and model.changed({"head": 1}).head == 1
    assert request.request is request and model.model is model and request.model is None
    inputs = (SentenceInput("a"), MatrixInput([[1.0]], [[1.0]], [[1.0]]), XInput([[1.0]]))
    assert [(s.kind, s.typed, s.embedded) for s in inputs] == [("sentence", False, True), ("matrices", True, False),
                                                              ("x", False, False)]


def test_no_view_tests_the_kind_of_an_ask_or_a_run() -> None:
    """Outside the sources (which turn asks into traces), nothing branches on the type of an ask, an input or
    run metadata: not the views, not the app, not the command line."""
    found = [f"{path.relative_to(PACKAGE)}:{n}" for path in PACKAGE.rglob("*.py")
             if path.relative_to(PACKAGE).parts[0] != "sources"
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if TESTED.search(line)]
    assert found == []


def test_compare_offers_the_users_own_code_only_its_other_heads() -> None:
    """A recorded program has no settings of attn-tui's: B is the same trace at another head, never the variants."""
    from attn_tui.present.compare import comparisons

    found = comparisons(RecordAsk(), heads=3, head=1)
    assert [(c.key, c.head) for c in found] == [("head", 0), ("head", 2)]
    variants = comparisons(VariantAsk(SentenceInput("a b"), Settings(mask="causal")), heads=1, head=0)
    assert variants and not any(c.fits(RecordAsk()) for c in variants)
    assert all(c.b_ask(RecordAsk()) == RecordAsk() for c in found)
