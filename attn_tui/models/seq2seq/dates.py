"""A seeded generator of dates written many ways (English and Korean) → ISO `YYYY-MM-DD`.

Two-digit years (`26년`, `'26`) always mean 2000–2099 here, the common reading, so the
task stays well defined; every other form carries its full year from 1900 to 2099.
Slashes with the year last are month first (US); dots and dashes with the year last are
day first, as most of Europe writes them.
Held-out dates are chosen by a fixed hash of the date itself, so no held-out date
ever appears in training in any surface form.
"""

from __future__ import annotations

import datetime as dt
import random

MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
KO_WEEKDAYS = "월화수목금토일"
FIRST, LAST = dt.date(1900, 1, 1), dt.date(2099, 12, 31)
HELD_OUT_PERCENT = 10

# Every character an input may contain; anything else is refused with a clear message.
INPUT_CHARS = sorted(set("0123456789 ,./-()'" + "".join(MONTHS + WEEKDAYS).lower()
                         + "".join(MONTHS + WEEKDAYS).upper() + "thndrs" + "년월일요" + KO_WEEKDAYS))
OUTPUT_CHARS = list("0123456789-")
PAD, START, END = "<pad>", "<s>", "</s>"


def ordinal(day: int) -> str:
    suffix = "th" if 11 <= day % 100 <= 13 else {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")
    return f"{day}{suffix}"


def _case(rng: random.Random, word: str) -> str:
    return rng.choice((word, word, word.lower(), word.upper()))


def _forms(d: dt.date, rng: random.Random) -> list[str]:
    """Surface forms of one date; the caller picks one."""
    month, mon = _case(rng, MONTHS[d.month - 1]), _case(rng, MONTHS[d.month - 1][:3])
    wd, wdy = _case(rng, WEEKDAYS[d.weekday()]), _case(rng, WEEKDAYS[d.weekday()][:3])
    kwd = KO_WEEKDAYS[d.weekday()]
    y, m, day = d.year, d.month, d.day
    forms = [
        f"{day} {month} {y}", f"{mon} {day}, {y}", f"{month.lower()} {ordinal(day)} {y}",
        f"{wd}, {day} {mon} {y}", f"{m}/{day}/{y}", f"{m:02d}/{day:02d}/{y}", f"{y}년 {m}월 {day}일",
        f"{month} {day}, {y}", f"{ordinal(day)} {month} {y}", f"the {ordinal(day)} of {month}, {y}",
        f"{mon}. {day}, {y}", f"{wdy} {day} {mon} {y}", f"{y}.{m:02d}.{day:02d}", f"{y}. {m}. {day}.",
        f"{day:02d}.{m:02d}.{y}", f"{y}-{m:02d}-{day:02d}", f"{y}년 {m}월 {day}일 {kwd}요일",
        f"{y}년 {m}월 {day}일 ({kwd})", f"{wd}, {month} {ordinal(day)}, {y}", f"{day} {mon} {y}",
        f"{y}/{m:02d}/{day:02d}", f"{y}/{m}/{day}", f"{day:02d}-{m:02d}-{y}", f"{day}-{mon}-{y}",
        f"{y}{m:02d}{day:02d}", f"{y}년{m}월{day}일",
    ]
    if y >= 2000:
        forms += [f"{y % 100:02d}년 {m}월 {day}일 {kwd}요일", f"{y % 100:02d}년 {m}월 {day}일",
                  f"{mon} {day} '{y % 100:02d}"]
    return forms


def is_held_out(d: dt.date) -> bool:
    return (d.toordinal() * 2654435761) % 100 < HELD_OUT_PERCENT


def random_date(rng: random.Random, held_out: bool) -> dt.date:
    span = (LAST - FIRST).days
    while True:
        d = FIRST + dt.timedelta(days=rng.randrange(span + 1))
        if is_held_out(d) == held_out:
            return d


def example(rng: random.Random, held_out: bool = False) -> tuple[str, str]:
    """One (surface form, ISO date) pair."""
    d = random_date(rng, held_out)
    return rng.choice(_forms(d, rng)), d.isoformat()


def dataset(n: int, seed: int, held_out: bool = False) -> list[tuple[str, str]]:
    rng = random.Random(seed)
    return [example(rng, held_out) for _ in range(n)]
