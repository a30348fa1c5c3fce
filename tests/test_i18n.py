"""Korean everywhere: every marked string has a Korean entry, the compiled catalog is current,
and messages are translated when they are read."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from attn_tui import i18n
from attn_tui.i18n import Msg, Plural

ROOT = Path(__file__).resolve().parent.parent


def _catalog_tool():
    spec = importlib.util.spec_from_file_location("catalog", ROOT / "tools" / "catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["catalog"] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_every_marked_string_has_korean_and_the_compiled_catalog_is_current() -> None:
    pytest.importorskip("babel")
    tool = _catalog_tool()
    template, catalog = tool.extract(), tool.korean()
    assert len(template) > 0
    assert tool.missing(template, catalog) == [], "run python tools/catalog.py and write the Korean"
    assert tool.COMPILED.read_bytes() == tool.compiled(catalog), "run python tools/catalog.py"


def test_the_compiled_catalog_ships_inside_the_package() -> None:
    assert (Path(i18n.__file__).parent / "locale" / "ko" / "LC_MESSAGES" / "attn_tui.mo").is_file()


def test_a_message_is_translated_when_it_is_read_not_when_it_is_made() -> None:
    message = Msg("query {label} (row {row}) may attend to no key: with fill -inf its weights and output are zeros, "
                  "as SDPA returns; a plain softmax (F.softmax, nn.Softmax) would give NaN here",
                  label="'<pad>'", row=3)
    english = str(message)
    i18n.set_language("ko")
    korean = str(message)
    assert english.startswith("query '<pad>' (row 3) may attend") and korean != english and "3" in korean
    assert message.english() == english and i18n.language() == "ko"


def test_plural_messages_agree_with_their_count() -> None:
    assert str(Plural("{n} key", "{n} keys", n=1)) == "1 key"
    assert str(Plural("{n} key", "{n} keys", n=4)) == "4 keys"


def test_messages_compare_by_their_english_and_values() -> None:
    assert Msg("{n} rows", n=3) == Msg("{n} rows", n=3) and Msg("{n} rows", n=3) != Msg("{n} rows", n=4)
    assert len({Msg("a {x}", x=1), Msg("a {x}", x=1), Msg("a {x}", x=2)}) == 2


@pytest.mark.parametrize(("variables", "expected"), [
    ({"ATTN_TUI_LANG": "ko"}, "ko"), ({"ATTN_TUI_LANG": "en", "LANG": "ko_KR.UTF-8"}, "en"),
    ({"LANG": "ko_KR.UTF-8"}, "ko"), ({"LANGUAGE": "ko:en"}, "ko"), ({"LANG": "C.UTF-8"}, "en"), ({}, "en"),
])
def test_the_language_follows_the_environment(monkeypatch: pytest.MonkeyPatch, variables: dict[str, str],
                                              expected: str) -> None:
    for name in ("ATTN_TUI_LANG", "LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert i18n._from_environment() == expected


def test_an_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="choose one of en, ko"):
        i18n.set_language("fr")


def test_every_translation_keeps_the_placeholders_of_its_english() -> None:
    """A Korean entry that drops or renames a {placeholder} would fail at run time, or show the wrong value."""
    import re

    pytest.importorskip("babel")
    tool = _catalog_tool()
    name = re.compile(r"\{(\w+)")
    for message in tool.korean():
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        wanted = set().union(*(name.findall(i) for i in ids))
        for string in strings:
            assert set(name.findall(string)) == wanted, (message.id, string)
            if len(ids) > 1:  # a plural entry written whole, not cut to its first character
                assert len(string) > 1, (message.id, string)


def test_a_particle_after_a_placeholder_fits_any_value() -> None:
    """Korean particles follow the last sound of the word before them (1을, 2를): after a {placeholder}
    whose value is not known in advance the entry must carry both forms, 을(를), 이(가), 은(는), 과(와), (으)로."""
    import re

    pytest.importorskip("babel")
    single = re.compile(r"\{\w+\}(?:을|를|이|가|은|는|와|과|으로|로)(?![가-힣(])")
    wrong = [string for message in _catalog_tool().korean() if message.id
             for string in (message.string if isinstance(message.string, tuple) else (message.string,))
             if single.search(string)]
    assert wrong == []


def test_a_two_form_particle_takes_the_form_its_value_ends_in() -> None:
    from attn_tui.i18n import Msg, language, particles, set_language

    assert particles("nan은(는) 유한한 수가 아닙니다") == "nan은 유한한 수가 아닙니다"  # 난: a final consonant
    assert particles("채움값 -inf이(가) 들어갑니다") == "채움값 -inf가 들어갑니다"  # 인프: a vowel
    assert particles("3이(가), 2이(가), 헤드로 1(으)로 2(으)로 층(으)로") == "3이, 2가, 헤드로 1로 2로 층으로"
    assert particles("'é'이(가)") == "'é'이(가)"  # unknown sound before it: both forms stay
    previous = language()
    set_language("ko")
    try:
        assert str(Msg("the score {score} is replaced by the fill {fill}", score="0.5", fill="-inf")).endswith(
            "-inf가 들어갑니다")
        assert str(Msg("{value} is not a finite number: every number must be finite", value="nan")).startswith(
            "nan은 ")
    finally:
        set_language(previous)


def test_a_recorded_programs_input_stages_have_korean_titles() -> None:
    from attn_tui.i18n import language, set_language
    from attn_tui.present.titles import stage_title

    previous = language()
    set_language("ko")
    try:  # the names the recorder gives a program's inputs before their projections (sources/recorder/expand.py)
        assert [stage_title(name) for name in ("input", "key_input", "value_input")] == ["입력", "키 입력", "값 입력"]
    finally:
        set_language(previous)


def test_a_traced_programs_captions_read_in_korean() -> None:
    from attn_tui.i18n import Msg, language, set_language

    previous = language()
    set_language("ko")
    try:  # the recorder's captions: `key 방향` and `mask가` were English words left in the Korean
        shown = [str(Msg("A = softmax({source}) over keys: each row sums to 1", source="M")),
                 str(Msg("M = S' where the mask allows, -∞ where it does not"))]
        assert shown == ["A = 키 방향 softmax(M): 행마다 합이 1", "M = 마스크가 허용하는 곳은 S', 아닌 곳은 -∞"]
    finally:
        set_language(previous)
