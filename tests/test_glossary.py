"""One Korean term per concept: docs/glossary.md's table, held against every Korean string of the catalog."""

from __future__ import annotations

import re
from pathlib import Path

from babel.messages.pofile import read_po

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "attn_tui" / "locale" / "ko" / "LC_MESSAGES" / "attn_tui.po"


def glossary() -> list[tuple[str, str, list[str]]]:
    """(English, Korean, the words never used for it), one per row of the table."""
    rows = []
    for line in (ROOT / "docs" / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[0] not in ("English", "---") and not set(cells[0]) <= {"-"}:
            english = re.sub(r"\s*\(.*\)", "", cells[0])
            rows.append((english, cells[1], [word.strip() for word in cells[2].split(",") if word.strip()]))
    return rows


def translations() -> list[tuple[str, str]]:
    with CATALOG.open("rb") as handle:
        catalog = read_po(handle, locale="ko")
    found = []
    for message in catalog:
        if not message.id or not message.string:
            continue
        english = message.id if isinstance(message.id, str) else " ".join(message.id)
        korean = message.string if isinstance(message.string, str) else " ".join(message.string)
        found.append((english, korean))
    return found


def test_the_glossary_lists_every_concept_once() -> None:
    rows = glossary()
    assert len(rows) >= 10 and len({english for english, _, _ in rows}) == len(rows)
    assert len({korean for _, korean, _ in rows}) == len(rows)  # two concepts never share a term


def test_no_korean_string_uses_a_word_the_glossary_rules_out() -> None:
    strings = translations()
    for english, term, never in glossary():
        for word in never:
            offending = [source for source, korean in strings if word in korean]
            assert offending == [], f"{word} for {english} (the term is {term}): {offending[:3]}"


def test_each_concept_is_named_by_its_term_where_the_english_names_it() -> None:
    strings = translations()
    for english, term, _ in glossary():
        naming = [korean for source, korean in strings if re.search(rf"\b{english}s?\b", source, re.IGNORECASE)]
        assert naming and sum(term in korean for korean in naming) >= len(naming) // 2, english


PRESSED_EN = re.compile(r"\bkeys? (?:[\[\]/]|\{ \}|\d+ =)|\bkey: \{key\}|without a key\b")
PRESSED_KO = re.compile(r"(?<!단축)키 (?:[\[\]/]|\{ \}|\d+ =)|(?<!단축)키: \{key\}|(?<!단축)키로 이동|키 입력 없이")


def test_a_key_pressed_is_never_called_a_key() -> None:
    """'keys [ ]' or '키 0 = …' reads as attention keys: the keyboard is 'press' (단축키, 누르면) or the symbol."""
    for pattern, wrong in ((PRESSED_EN, "keys [ ]"), (PRESSED_EN, "key 0 = stage 10"), (PRESSED_KO, "키 [ ]"),
                           (PRESSED_KO, "{ } 와 [ ] 키로 이동합니다")):
        assert pattern.search(wrong)  # the patterns catch what they are for
    offending = [(english, korean) for english, korean in translations()
                 if PRESSED_EN.search(english) or PRESSED_KO.search(korean)]
    assert offending == []


def test_step_and_stage_have_a_term_each() -> None:
    """A decoder's step is 스텝, a stage of the pipeline 단계: a string naming steps and not stages says 스텝."""
    only_steps = [korean for english, korean in translations()
                  if re.search(r"\b(decoder )?steps?\b", english) and not re.search(r"\bstages?\b", english)
                  and re.search(r"\b(decoder|every|this|that|each|first|after|of) steps?\b|\bsteps? \{", english)]
    assert only_steps and all("단계" not in korean for korean in only_steps), [k for k in only_steps if "단계" in k]
