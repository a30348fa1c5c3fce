"""Every string a user reads, in English or Korean, from gettext catalogs in attn_tui/locale.

Strings are written in English where they are used, and marked:

- `_("…")` translates now: a label drawn now;
- `N_("…")` only marks: a constant, translated with `_` where it is drawn;
- `pgettext("stage", "weights")`: a short word whose meaning depends on the context
  (`NP_("stage", "weights")` marks one to be translated later);
- `Msg("… {name} …", name=…)` is translated each time it is read (`str(msg)`), so a warning
  the worker made while the screen was in English reads in Korean after `t`, and an error
  raised deep in the core reaches the command line in the user's language;
- `Plural("{n} row", "{n} rows", n=…)` is a Msg that agrees with its count.

The language is English unless ATTN_TUI_LANG, or the locale (LANGUAGE, LC_ALL,
LC_MESSAGES, LANG), says Korean; the app switches it with `t`. Only the standard library
is used, so every layer, torch-free ones included, may import this module.
"""

from __future__ import annotations

import gettext
import os
import re
from functools import cache
from pathlib import Path

DOMAIN = "attn_tui"
LOCALE_DIR = Path(__file__).parent / "locale"
LANGUAGES = ("en", "ko")


def _from_environment() -> str:
    chosen = os.environ.get("ATTN_TUI_LANG", "")
    if chosen:
        return "ko" if chosen.lower().startswith("ko") else "en"
    for variable in ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG"):
        value = os.environ.get(variable, "")
        if value:
            return "ko" if value.split(":")[0].lower().startswith("ko") else "en"
    return "en"


_language = _from_environment()


@cache
def _catalog(language: str) -> gettext.NullTranslations:
    return gettext.translation(DOMAIN, LOCALE_DIR, languages=[language], fallback=True)


def language() -> str:
    return _language


def set_language(language: str) -> None:
    global _language
    if language not in LANGUAGES:
        raise ValueError(f"language {language!r}: choose one of {', '.join(LANGUAGES)}")
    _language = language


def _(message: str) -> str:
    return _catalog(_language).gettext(message)


def N_(message: str) -> str:  # noqa: N802  (the gettext name for "mark, translate later")
    return message


def NP_(context: str, message: str) -> str:  # noqa: N802  (marks a context string, translated later)
    return message


def pgettext(context: str, message: str) -> str:
    return _catalog(_language).pgettext(context, message)


def ngettext(singular: str, plural: str, n: int) -> str:
    return _catalog(_language).ngettext(singular, plural, n)


class Msg:
    """A message translated when it is read: `str(Msg("{n} keys", n=3))`.

    Values may be Msgs themselves (translated in turn). Two Msgs are equal when their
    English text and values are, so a trace's warnings can be deduplicated and compared
    whatever the language on screen.
    """

    __slots__ = ("text", "values")

    def __init__(self, text: str, /, **values: object) -> None:
        self.text = text
        self.values = values

    def template(self) -> str:
        return _(self.text)

    def __str__(self) -> str:
        template = self.template()
        if not self.values:
            return template
        text = template.format(**{k: str(v) if isinstance(v, Msg) else v for k, v in self.values.items()})
        return particles(text) if _language == "ko" else text

    def english(self) -> str:
        """The message in English, whatever the language on show (logs, exported files)."""
        global _language
        current, _language = _language, "en"
        try:
            return str(self)
        finally:
            _language = current

    def _key(self) -> tuple[object, ...]:
        return (type(self), self.text, tuple(sorted((k, repr(v)) for k, v in self.values.items())))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return str(self) == other
        return isinstance(other, Msg) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.text!r}{''.join(f', {k}={v!r}' for k, v in self.values.items())})"

    def __contains__(self, part: str) -> bool:
        return part in str(self)


class Plural(Msg):
    """A Msg in the singular or plural form its count `n` asks for (Korean has one form)."""

    __slots__ = ("plural",)

    def __init__(self, singular: str, plural: str, /, **values: object) -> None:
        super().__init__(singular, **values)
        self.plural = plural

    def template(self) -> str:
        count = self.values.get("n")
        return ngettext(self.text, self.plural, count if isinstance(count, int) else 2)



class Join(Msg):
    """Parts joined by a separator, each read in the language on show: `Join(" + ", Msg("causal"), …)`."""

    __slots__ = ("parts",)

    def __init__(self, separator: str, *parts: str | Msg) -> None:
        super().__init__(separator)
        self.parts = parts

    def __str__(self) -> str:
        return self.text.join(str(part) for part in self.parts)

    def _key(self) -> tuple[object, ...]:
        return (type(self), self.text, tuple(repr(p) for p in self.parts))


# A Korean particle after a value not known in advance is written with both forms, `{value}이(가)`; once the value
# is in, the sound it ends with picks one: `nan은`, `-inf가`, `3이`, `헤드로`. Digits are read in Sino-Korean
# (영 일 이 삼 …) and Latin letters by their names (엘 엠 엔 알 end in a consonant, the rest in a vowel).
_BOTH = re.compile(r"(\w)(이\(가\)|은\(는\)|을\(를\)|과\(와\)|\(으\)로)")
_FORMS = {"이(가)": ("이", "가"), "은(는)": ("은", "는"), "을(를)": ("을", "를"), "과(와)": ("과", "와"),
          "(으)로": ("으로", "로")}
_CLOSED = {**dict.fromkeys("013678lmnr", True), **dict.fromkeys("2459abcdefghijkopqstuvwxyz", False)}
_ENDS_IN_L = set("178lr")  # 일 칠 팔 엘 알: ㄹ takes 로, not 으로


def _ending(char: str) -> tuple[bool, bool] | None:
    """(ends in a consonant, that consonant is ㄹ) for a Hangul syllable, a digit or a Latin letter; None else."""
    if "가" <= char <= "힣":
        final = (ord(char) - 0xAC00) % 28
        return final != 0, final == 8
    closed = _CLOSED.get(char.lower())
    return None if closed is None else (closed, char.lower() in _ENDS_IN_L)


def particles(text: str) -> str:
    """`nan은(는)` → `nan은`, `-inf이(가)` → `-inf가`: each two-form particle after a word whose last sound is known
    becomes the one form that fits; after anything else (a quote, a symbol) both forms stay."""

    def one(match: re.Match[str]) -> str:
        char, both = match.groups()
        ending = _ending(char)
        if ending is None:
            return match.group(0)
        closed, in_l = ending
        after_consonant, after_vowel = _FORMS[both]
        if both == "(으)로":
            return char + (after_vowel if in_l or not closed else after_consonant)
        return char + (after_consonant if closed else after_vowel)

    return _BOTH.sub(one, text)
