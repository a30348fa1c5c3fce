"""No option is silently ignored: one that does not apply is an error naming it; text is never markup."""

from __future__ import annotations

import json

import pytest

from tests.hostile.helpers import attn_tui

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("argv,fragment", [
    (["stages", "--text", "a b", "--variant", "dot", "--heads", "2"], "--heads does not apply to dot"),
    (["stages", "--sample", "lookup", "--positional"], "--positional does not apply to typed"),
    (["stages", "--sample", "lookup", "--dim", "4"], "--dim does not apply to scaled_dot"),
    (["stages", "--sample", "lookup", "--seed", "3"], "--seed does not apply"),
    (["stages", "--text", "a b", "--mask-fill", "-1e9"], "--mask-fill does not apply without a mask"),
    (["stages", "--text", "a b", "--pad-keys", "1"], "--pad-keys needs a padding mask"),
    (["stages", "--text", "a b", "--layer", "1"], "--layer does not apply to the attention variants"),
    (["stages", "--model", "seq2seq-dates", "--text", "22 Nov 2026", "--mask", "causal"], "--mask does not apply"),
    (["stages", "--model", "seq2seq-dates", "--text", "22 Nov 2026", "--device", "cuda"], "CPU only"),
    (["stages", "--model", "seq2seq-dates", "--text", "22 Nov 2026", "--layer", "1"], "--layer does not apply"),
    (["stages", "--model", "minilm", "--text", "a b", "--target", "2026-11-22"], "--target does not apply"),
    (["--variant", "dot", "stages", "--text", "a"], "--variant must come after the subcommand"),
    (["stages", "--text", "a", "--format", "table", "--params"], "--params applies to --format json"),
    (["stages", "--sample", "x" * 300], "no sample called"),
    (["stages", "--model", "m" * 300, "--text", "a"], "no model"),
    (["stages", "--text", "a b", "--layer", "0"], "--layer does not apply"),  # 0 is a value, not an absence
    (["stages", "--model", "seq2seq-dates", "--text", "1 May 2020", "--head", "0"], "--head does not apply"),
    (["stages", "--model", "seq2seq-dates", "--text", "1 May 2020", "--seed", "0"], "--seed does not apply"),
    (["--seed", "0", "stages", "--text", "a"], "--seed must come after the subcommand"),
    (["--max-memory", "1G", "samples"], "--max-memory does not apply to samples"),
    (["stages", "--sample", "korean", "--model", "minilm", "--text", "a"], "cannot be combined with --model"),
    (["stages", "--model", "seq2seq-dates", "--text", "1 May 2020", "--target", "2020-05-0x"], "target column 10"),
    (["stages", "--text", "a", "--max-memory", "9" * 400], "--max-memory expects a size"),
    (["stages", "--text", "a", "--seed", "1_0"], "expected a whole number"),
    (["stages", "--text", "a", "--variant", "v" * 300], "invalid choice"),
    (["train-seq2seq", "--out", "-"], "written to a file"),
    (["heads", "--model", "minilm", "--text", " "], "the sentence is empty"),
    (["serve", "--host", "!!!garbage!!!", "--port", "8765"], "cannot serve on '!!!garbage!!!'"),
    (["serve", "--host", "300.1.1.1"], "cannot serve on '300.1.1.1'"),
    (["serve", "--host", "a" * 300], "not a host name or address"),
    (["serve", "--host", "8.8.8.8", "--port", "8766"], "cannot serve on '8.8.8.8' port 8766"),  # not this machine's
])
def test_options_that_do_not_apply_are_errors(argv: list[str], fragment: str) -> None:
    outcome = attn_tui(*argv)
    assert outcome.refused(fragment), outcome
    for letter in "xmv9":
        assert letter * 61 not in outcome.err  # at most ~60 characters of the input quoted


def test_bytes_that_are_not_utf8_are_refused() -> None:
    outcome = attn_tui("stages", "--text", b"caf\xe9 au lait")
    assert outcome.refused("not valid UTF-8"), outcome


def test_markup_in_tokens_is_shown_as_typed() -> None:
    outcome = attn_tui("stages", "--text", "[bold red]x a [/] b [x]", "--stage", "weights")
    assert outcome.code == 0, outcome.err
    assert "[bold" in outcome.out and "[/]" in outcome.out


@pytest.mark.slow
def test_truncation_to_a_models_positions_is_a_warning() -> None:
    outcome = attn_tui("stages", "--model", "minilm", "--text", " ".join(["word"] * 700), "--stage", "scores",
                       "--format", "json")
    assert outcome.code == 0, outcome.err
    doc = json.loads(outcome.out)
    assert len(doc["tokens"]["query"]) == 512
    assert any("reads at most 512" in warning for warning in doc["warnings"])


def test_control_characters_never_reach_the_terminal_raw() -> None:
    outcome = attn_tui("stages", "--text", "a", "\x1b[31mRED\x1b]0;TITLE\x07")
    assert outcome.refused("unrecognized arguments"), outcome
    assert "\x1b" not in outcome.err and "\x07" not in outcome.err and "␛" in outcome.err


def test_debug_is_off_unless_asked_for() -> None:
    outcome = attn_tui("stages", "--x", "/dev/null", env={"ATTN_TUI_DEBUG": "0"})
    assert outcome.refused("character device"), outcome


@pytest.mark.parametrize("content,fragment", [
    (b"\xef\xbb\xbf1 2\n3 4", ""),  # a byte-order mark is not part of the matrix
    (b"1 2; , 3 4", "expected a number before ','"),
    (b"1e300 1", "beyond float32's range"),
])
def test_odd_matrix_files(tmp_path, content: bytes, fragment: str) -> None:
    (tmp_path / "x").write_bytes(content)
    outcome = attn_tui("stages", "--x", str(tmp_path / "x"), "--variant", "multihead", "--heads", "1")
    if fragment:
        assert outcome.refused(fragment), outcome
    else:
        assert outcome.code == 0, outcome.err


def test_a_bidi_override_in_a_token_cannot_reverse_the_line() -> None:
    outcome = attn_tui("stages", "--text", "abc \u202eevil \u2067x", "--stage", "weights")
    assert outcome.code == 0, outcome.err
    assert not any(ch in outcome.out for ch in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
    assert "abc" in outcome.out and "evil" in outcome.out
