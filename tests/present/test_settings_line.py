"""The line naming every setting that differs from the defaults, from a computed trace, in both languages."""

from __future__ import annotations

from dataclasses import replace

from attn_tui import i18n
from attn_tui.ask.samples import get_sample
from attn_tui.attention.engine import compute
from attn_tui.present.settings_line import settings_line
from tests.conftest import matrices as cpu_matrices
from tests.conftest import sentence as cpu_sentence
from tests.conftest import x_matrix as cpu_x_matrix


# The test helpers name the CPU for their references; here the device is the default, as the app starts.
def matrices(*args: object, **settings: object):  # type: ignore[no-untyped-def]
    return cpu_matrices(*args, **{"device": "auto", **settings})


def sentence(*args: object, **settings: object):  # type: ignore[no-untyped-def]
    return cpu_sentence(*args, **{"device": "auto", **settings})


def x_matrix(*args: object, **settings: object):  # type: ignore[no-untyped-def]
    return cpu_x_matrix(*args, **{"device": "auto", **settings})

Q, K, V = [[0, 10, 0]], [[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]], [[1, 0], [10, 0], [100, 5], [1000, 6]]


def test_defaults_say_nothing() -> None:
    assert settings_line(compute(matrices(Q, K, V))) == ""
    assert settings_line(compute(sentence("나는 학교에 간다"))) == ""


def test_every_setting_that_changes_the_numbers_is_named_in_order() -> None:
    trace = compute(matrices(Q, K, V, mask="causal+padding", pad_keys=1, mask_fill="-1e9", temperature=2.0,
                             dtype="float64"))
    assert settings_line(trace) == "≠ defaults: mask causal+padding · fill -1e9 · pad keys 1 · dtype float64 · " \
                                   "temp 2"
    trace = compute(sentence("a b c", positional=True, seed=3, dim=4, projection="identity"))  # seeded embedding
    assert settings_line(trace) == "≠ defaults: dim 4 · pos enc on · seed 3 · proj identity"
    trace = compute(x_matrix([[1, 0], [0, 1]], variant="multihead", heads=1, positional=True))
    assert settings_line(trace) == "≠ defaults: heads 1 · pos enc on"


def test_settings_that_do_nothing_here_are_not_named() -> None:
    # a window without a sliding mask, a seed and positions for typed Q, K, V: none of them changed a number
    trace = compute(matrices(Q, K, V, window=5, seed=9))
    assert settings_line(trace) == ""


def test_a_mask_edited_by_hand_is_named() -> None:
    trace = compute(replace(matrices(Q, K, V, custom_mask=[[1, 0, 1, 1]]), mask_by_hand=True))
    assert settings_line(trace) == "≠ defaults: mask cells masked by hand"


def test_a_mask_from_a_file_or_sample_is_a_custom_mask_not_one_masked_by_hand() -> None:
    trace = compute(matrices(Q, K, V, custom_mask=[[1, 0, 1, 1]]))  # as --mask-file gives it
    assert settings_line(trace) == "≠ defaults: mask custom"
    trace = compute(get_sample("luong_padding_note").request)
    assert "by hand" not in settings_line(trace) and "mask custom" in settings_line(trace)


def test_a_sentence_dim_equal_to_the_default_width_is_not_named() -> None:
    # note_001_masked says dim = 8: the width an unset dim gives a sentence, so nothing differs
    assert "dim" not in settings_line(compute(get_sample("note_001_masked").request))
    assert settings_line(compute(sentence("a b c", dim=8))) == ""


def test_the_line_speaks_korean() -> None:
    trace = compute(get_sample("korean_padded").request)
    i18n.set_language("ko")
    assert settings_line(trace) == "≠ 기본값: 마스크 padding"
