"""Korean everywhere: after `t`, every screen reads in Korean (the footer, panes, stage bar, inspector,
panels, help, choosers), and `t` again brings every word back to English."""

from __future__ import annotations

import re

import pytest

from attn_tui import i18n
from tests.tui.helpers import sample_app, settle

SIZE = (130, 40)
ENGLISH_WORD = re.compile(r"[A-Za-z]{4,}")


def _screen_text(app) -> str:
    """Every word the screen shows, read the way the terminal gets it."""
    svg = app.export_screenshot()
    text = re.sub(r"<[^>]+>", " ", svg)
    for entity, char in (("&#160;", " "), ("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&#x27;", "'"),
                         ("&quot;", '"')):
        text = text.replace(entity, char)
    return text


def _english_phrases() -> list[str]:
    """The fixed parts of every English message the app may show, long enough to be unmistakable."""
    from babel.messages.pofile import read_po

    with (i18n.LOCALE_DIR / "ko" / "LC_MESSAGES" / "attn_tui.po").open("rb") as handle:
        catalog = read_po(handle)
    phrases = set()
    for message in catalog:
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        for text in ids:
            for part in re.split(r"\{[^}]*\}", text or ""):
                part = part.strip(" :;,.()")
                if len(part) >= 14 and len(part.split()) >= 3:
                    phrases.add(part)
    return sorted(phrases)


async def _visit(pilot) -> list[str]:
    """Texts of the screens a learner sees: a stage, the heads, help, the compare chooser, export."""
    app = pilot.app
    seen = [_screen_text(app)]
    await pilot.press("8")
    seen.append(_screen_text(app))
    await pilot.press("g")
    seen.append(_screen_text(app))
    await pilot.press("g", "question_mark")
    await pilot.pause()
    seen.append(_screen_text(app))
    await pilot.press("escape", "c")
    await pilot.pause()
    seen.append(_screen_text(app))
    await pilot.press("escape", "e")
    await pilot.pause()
    seen.append(_screen_text(app))
    await pilot.press("escape")
    return seen


@pytest.mark.slow
async def test_korean_mode_leaves_no_english_message_on_any_screen() -> None:
    pytest.importorskip("babel")
    phrases = _english_phrases()
    app = sample_app("multihead_korean")
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        english = await _visit(pilot)
        assert any("Next stage" in text for text in english)  # the check can see English when it is there
        await pilot.press("t")
        await pilot.pause()
        korean = await _visit(pilot)
        for text in korean:
            left = [p for p in phrases if p in text]
            assert not left, left
            assert "다음" in text or "도움말" in text or "내보내기" in text or "비교" in text
        await pilot.press("t")
        await pilot.pause()
        assert "Next stage" in _screen_text(app)


async def test_t_relabels_the_panes_footer_and_stage_bar() -> None:
    app = sample_app()
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        await pilot.press("8", "t")
        await pilot.pause()
        text = _screen_text(app)
        for korean in ("모델", "변형", "문장", "행렬", "샘플", "가중치", "다음", "소프트맥스"):
            assert korean in text, korean
        assert "Sentence" not in text and "Next stage" not in text and "Why" not in text
        assert "설명" in text and "칸" in text  # the explanation and the inspector's headings
