"""Compare mode for a real transformer: another of its layers (read from A's own trace) or another model opened."""

from __future__ import annotations

from attn_tui.ask.settings import ModelAsk
from attn_tui.present.compare import comparisons

A = ModelAsk("/models/llama-tiny", "the cat sat", layer=1, head=2)


def test_a_transformer_offers_its_other_heads_and_layers_and_the_other_models_opened() -> None:
    found = comparisons(A, heads=4, head=2, layers=3, layer=1,
                        others=["/models/llama-tiny", "/models/gemma3-tiny/", "seq2seq-dates", "minilm"],
                        windows=[3, None, 3])
    layers = [c for c in found if c.key == "layer"]
    assert [c.layer for c in layers] == [0, 2] and all(c.same_trace and c.b_ask(A) is A for c in layers)
    assert [str(c.title) for c in layers] == ["A: layer 1   B: layer 0, window 3", "A: layer 1   B: layer 2, window 3"]
    assert [c.head for c in found if c.key == "head"] == [0, 1, 3]
    others = [c for c in found if c.key == "other"]
    assert [str(c.b_label) for c in others] == ["gemma3-tiny", "minilm"]  # not A itself, not a date model
    b = others[0].b_ask(A)
    assert (b.name, b.text, b.layer, b.head) == ("/models/gemma3-tiny/", A.text, 0, 0)  # B starts at its first place
    assert not others[0].same_trace and str(others[0].a_label) == "llama-tiny"


def test_the_changes_fit_a_transformer_only_and_not_the_model_b_is() -> None:
    found = {c.key: c for c in comparisons(A, 1, 0, 2, 1, ["minilm"])}
    layer, other = found["layer"], found["other"]
    assert layer.fits(A) and other.fits(A)
    assert not other.fits(ModelAsk("minilm", "x"))  # A is now what B was
    dates = ModelAsk("seq2seq-dates", "Nov 22, 2026")
    assert not layer.fits(dates) and not other.fits(dates)
    assert not [c for c in comparisons(dates, 1, 0, 1, 0, ["minilm"]) if c.key in ("layer", "other")]


def test_the_same_transformer_on_its_sentence_twice() -> None:
    """The head atlas's second input: B is A's model on A's sentence repeated, following A's edits."""
    repeat = next(c for c in comparisons(A, 1, 0, 2, 1) if c.key == "repeat")
    assert not repeat.same_trace and repeat.fits(A)
    assert repeat.b_ask(A) == ModelAsk("/models/llama-tiny", "the cat sat the cat sat", layer=1, head=2)
    edited = ModelAsk("/models/llama-tiny", "a b")
    assert repeat.b_ask(edited).text == "a b a b"
    assert str(repeat.title) == "A: the sentence   B: the sentence twice"
    assert not repeat.fits(ModelAsk("seq2seq-dates", "Nov 22, 2026"))
    writing = ModelAsk("/models/llama-tiny", "a b", generate=3)
    assert not repeat.fits(writing) and not [c for c in comparisons(writing, 1, 0, 2, 1) if c.key == "repeat"]
