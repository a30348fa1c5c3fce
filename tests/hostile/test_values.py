"""Values that do not come through the parser (the Python API, a saved session, a hand-built ask) are checked as
strictly as typed options: one clear error naming the field, never a TypeError or KeyError deep inside."""

from __future__ import annotations

import json
import math

import pytest
import torch

import attn_tui
from attn_tui.ask.checks import check_fields, matrix_shape
from attn_tui.ask.settings import ModelAsk, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.attention.engine import compute
from attn_tui.errors import AttnError, ConfigError, InputError
from attn_tui.io.session import SessionError, parse


@pytest.mark.parametrize("options,fragment", [
    ({"text": 5}, "text= must be text, not 5"),
    ({"text": b"a b"}, "text= must be text"),
    ({"text": "a b", "variant": "nope"}, "unknown variant= 'nope'"),
    ({"text": "a b", "variant": 3}, "variant= must be text"),
    ({"text": "a b", "variant": "multihead", "heads": True}, "heads= must be a number, not True"),
    ({"text": "a b", "variant": "multihead", "heads": 2.5}, "expected a whole number"),
    ({"text": "a b", "variant": "multihead", "heads": 0}, "must be between 1 and 64"),
    ({"text": "a b", "dim": 8.0}, "expected a whole number"),
    ({"text": "a b", "temperature": "hot"}, "expected a number"),
    ({"text": "a b", "temperature": math.nan}, "positive finite number"),
    ({"text": "a b", "seed": 1.5}, "expected a whole number"),
    ({"text": "a b", "mask": "padding", "pad_keys": "1"}, None),  # text the parser reads, as on the command line
    ({"text": "a b", "positional": "yes"}, "positional= must be true or false"),
    ({"text": "a b", "dtype": torch.float64}, "dtype= must be text"),
    ({"x": [[1, 2], [3]]}, "X: row 2 has 1 number but row 1 has 2"),
    ({"x": []}, "X has no numbers"),
    ({"x": [[], []]}, "empty row"),
    ({"x": [[math.nan, 1], [1, 1]]}, "X holds nan at row 1, column 1: every number must be finite"),
    ({"x": [[1, math.inf], [1, 1]]}, "X holds inf at row 1, column 2"),
    ({"x": [[1, 2], [3, 4]], "mask_file": [[1], [1, 0]]}, "the mask: row 2 has 2 numbers but row 1 has 1"),
    ({"model": 5, "text": "a"}, "model= must be text"),
    ({"model": "seq2seq-dates", "text": "1 May 2020", "target": 20200501}, "target= must be text"),
    ({"text": "a b", "max_memory": "lots"}, "max_memory expects a size"),
    ({"text": "a b", "max_memory": -5}, "max_memory must be between 1M and 1024P"),
    ({"text": "a b", "max_memory": True}, "max_memory expects a size"),
    ({"text": "a \ud800 b"}, "not valid UTF-8"),
])
def test_the_api_refuses_bad_values_in_its_own_words(options: dict[str, object], fragment: str | None) -> None:
    if fragment is None:
        assert attn_tui.compute(**options).tensor("weights").shape == (2, 2)
        return
    with pytest.raises(AttnError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        attn_tui.compute(**options)


def test_max_memory_takes_a_size_text_too() -> None:
    assert attn_tui.compute("a b", max_memory="512M").tensor("weights").shape == (2, 2)


def test_a_hand_built_request_is_checked_before_any_tensor() -> None:
    with pytest.raises(ConfigError, match="unknown projection 'sideways'"):
        compute(VariantAsk(SentenceInput("a b"), Settings(projection="sideways")))
    with pytest.raises(ConfigError, match="heads must be a whole number, not '2'"):
        compute(VariantAsk(SentenceInput("a b"), Settings(variant="multihead", heads="2")))  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="temperature must be a number, not 'warm'"):
        compute(VariantAsk(SentenceInput("a b"), Settings(temperature="warm")))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="the sentence holds a NUL character"):
        compute(VariantAsk(SentenceInput("a\0b")))
    with pytest.raises(InputError, match="X: row 2 has 3 numbers"):
        compute(VariantAsk(XInput([[1.0], [1.0, 2.0, 3.0]])))


def test_field_and_shape_checks() -> None:
    check_fields(Settings(dim=None, temperature=2))  # an int is a number; None is a dim not given
    check_fields(ModelAsk("minilm", "a", pad_to=None, target=None))
    with pytest.raises(ConfigError, match="model.layer must be a whole number, not True"):
        check_fields(ModelAsk("minilm", "a", layer=True), "model")  # type: ignore[arg-type]
    assert matrix_shape([[1, 2], [3, 4], [5, 6]], "X") == (3, 2)
    with pytest.raises(InputError, match="must be a matrix"):
        matrix_shape([1, 2], "X")  # type: ignore[list-item]


def test_nan_from_an_overflow_names_the_overflow() -> None:
    """1e20 fits float32, but the dot products of its projections do not: ∞ − ∞ inside `scores` is NaN."""
    trace = compute(VariantAsk(XInput([[1e20, 1e20], [1e20, 1e20]])))
    warnings = [str(w) for w in trace.warnings]
    assert any(w.startswith("stage scores has") and "torch.float32 overflowed inside this stage" in w
               for w in warnings), warnings
    assert any(w.startswith("stage weights has") and "they follow from the NaN values of stage scores" in w
               for w in warnings), warnings
    assert trace.dtype == "float32" and torch.isnan(trace.tensor("weights")).any()  # named, not hidden
    wider = compute(VariantAsk(XInput([[1e20, 1e20], [1e20, 1e20]]), Settings(dtype="float64")))
    assert not [w for w in wider.warnings if "NaN" in str(w)] and torch.isfinite(wider.tensor("weights")).all()


def _session(**fields: object) -> str:
    return json.dumps({"version": 1, **fields})


@pytest.mark.parametrize("text,fragment", [
    ('{"version": 1, "editors": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested too deeply"),
    (_session(settings={"variant": "bogus"}), "unknown settings.variant 'bogus'"),
    (_session(settings={"mask": "zzz"}), "unknown settings.mask"),
    (_session(settings={"device": "tpu"}), "unknown settings.device"),
    (_session(settings={"projection": 1}), "settings.projection must be text"),
    (_session(settings={"heads": "2"}), "settings.heads must be a whole number"),
    (_session(model={"name": "minilm", "text": "a", "pad_to": "abc"}), "model.pad_to must be a whole number"),
    (_session(model={"name": "seq2seq-dates", "text": "1 May", "target": 5}), "model.target must be text"),
    (_session(model={"name": "minilm", "text": "a", "teacher_forcing": "yes"}), "model.teacher_forcing"),
    (_session(custom_mask=[[1], [1, 0, 1]]), "custom_mask: row 2 has 3 numbers"),
    (_session(custom_mask=[]), "custom_mask has no numbers"),
    ('{"version": 1, "custom_mask": [[1, NaN]]}', "the mask holds nan at row 0, column 1"),  # as Python writes NaN
    (_session(custom_mask=[[1, 0.5]], settings={"mask_means": "block"}), "the mask holds 0.5 at row 0, column 1"),
    ('{"version": 1, "sentence": "a \\ud800 b"}', "sentence holds bytes that are not valid UTF-8"),
    ('{"version": 1, "editors": {"Q": "1\\u0000"}}', "editors.Q holds a NUL character"),
    ('{"version": true}', "another version"),
])
def test_a_broken_session_says_what_is_wrong(text: str, fragment: str) -> None:
    with pytest.raises(SessionError, match=fragment.replace("(", r"\(")):
        parse(text)


def test_an_overflow_is_blamed_once_and_followed_per_head() -> None:
    """float16 holds 300 but not 300·300 + 300·300: `scores` overflowed; what comes after follows from it."""
    from attn_tui.ask.settings import MatrixInput

    rows = [[300.0, 300.0], [1.0, 1.0]]
    trace = compute(VariantAsk(MatrixInput(rows, rows, rows), Settings(dtype="float16")))
    warnings = [str(w) for w in trace.warnings]
    assert warnings[0] == ("stage scores has 1 infinite value: torch.float16 overflowed (its largest finite value is "
                           "6.55e+04)")
    assert all("they follow from the infinite values of stage scores" in w for w in warnings[1:]), warnings
    heads = compute(VariantAsk(XInput([[3000.0] * 4, [1.0] * 4]),
                               Settings(variant="multihead", heads=2, dtype="float16")))
    text = "\n".join(str(w) for w in heads.warnings)
    assert "scaled@h1 has 1 infinite value: they follow from the infinite values of stage scores@h1" in text, text


def test_an_export_larger_than_the_free_disk_is_refused_before_writing(tmp_path, monkeypatch) -> None:
    import shutil
    from collections import namedtuple

    from attn_tui.io.export import export

    trace = compute(VariantAsk(SentenceInput("나는 학교에 간다")))
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**6, 10**6 - 100, 100))
    with pytest.raises(InputError, match="it would take about .* and 100 B is free there"):
        export(trace, list(trace), "npz", tmp_path / "t.npz")
    assert not list(tmp_path.iterdir())


def test_a_state_directory_that_cannot_be_looked_in_is_a_fresh_start(tmp_path) -> None:
    from attn_tui.io.session import load

    with pytest.raises(SessionError, match="File name too long"):
        load(tmp_path / ("x" * 300) / "session.json")


def test_record_checks_its_arguments_and_never_drops_labels_in_silence() -> None:
    q = torch.randn(1, 2, 4, 8)
    with pytest.raises(ConfigError, match="tokens= must be a list of words, not 5"):
        attn_tui.record(tokens=5)  # type: ignore[arg-type]
    for calls in (0, -1, "5", True):
        with pytest.raises(ConfigError, match="max_calls= must be a whole number between 1 and 4096"):
            attn_tui.record(max_calls=calls)  # type: ignore[arg-type]
    with attn_tui.record(tokens=["a", "b"]) as short:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    assert short.trace.query_tokens == ("q0", "q1", "q2", "q3")
    assert [str(w) for w in short.trace.warnings] == ["2 labels were given for 4 queries; they are numbered instead"]
    with attn_tui.record(tokens="나는 학교에 간다 정말") as sentence:
        torch.nn.functional.scaled_dot_product_attention(q, q, q)
    assert sentence.trace.query_tokens == ("나는", "학교에", "간다", "정말") and not sentence.trace.warnings
    with attn_tui.record() as nothing:
        pass
    with pytest.raises(AttnError, match="no softmax"):
        nothing.trace  # noqa: B018  (the property builds the trace)


def test_an_array_is_sized_before_it_becomes_python_numbers() -> None:
    """np.zeros((20000, 8)) would be refused anyway; it must be refused before 160,000 Python floats exist."""
    import numpy as np

    with pytest.raises(ConfigError, match="X has 20,000 rows; attn-tui shows at most 16,384"):
        attn_tui.compute(x=np.zeros((20_000, 8)))
    with pytest.raises(AttnError, match="X would need about 1.9 GB of memory"):
        attn_tui.compute(x=np.zeros((16_000, 4_000)), max_memory="1G")  # np.zeros is lazy: no memory yet
    for odd in (torch.randn(2, 3, device="meta"), torch.eye(3).to_sparse()):
        with pytest.raises(InputError, match="X must be a matrix"):
            attn_tui.compute(x=odd)


def test_a_date_target_is_checked_wherever_it_comes_from() -> None:
    """The app's target field and the API refuse what `--target` refuses, with or without teacher forcing."""
    from attn_tui.sources import run

    with pytest.raises(InputError, match="target column 1: '나' is not a digit"):
        run(ModelAsk("seq2seq-dates", "22 Nov 2026", target="나는"))
