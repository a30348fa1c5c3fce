"""The message catalogs: extract every marked string, merge it into the Korean catalog, compile it.

    python tools/catalog.py            # merge new strings into attn_tui/locale/ko/…/attn_tui.po, write the .mo
    python tools/catalog.py --check    # exit 1 when a marked string has no Korean, or the .mo is stale
    python tools/catalog.py --merge ko.json   # add Korean from {"English": "한국어", "context\x04English": …}

Strings are marked with `_`, `N_`, `pgettext`, `ngettext`, `Msg` and `Plural` (see attn_tui/i18n.py).
Needs Babel (in the `test` extra).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - 3.10 only
    import tomli as tomllib

from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_dir
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
PACKAGE = ROOT / "attn_tui"
LOCALE = PACKAGE / "locale"
KOREAN = LOCALE / "ko" / "LC_MESSAGES" / "attn_tui.po"
COMPILED = KOREAN.with_suffix(".mo")
KEYWORDS = {"_": None, "N_": None, "Msg": None, "Plural": (1, 2), "ngettext": (1, 2), "pgettext": ((1, "c"), 2),
            "NP_": ((1, "c"), 2)}
METHODS = [("**.py", "python")]
HEADER = ("# Korean messages of attn-tui, written by its developers.\n"
          "# Merged and compiled by tools/catalog.py; the English is in the code.")


class Unversioned(Catalog):
    """A catalog whose header leaves out `Generated-By: Babel x.y.z`, so that the files written from it are the
    same bytes whichever Babel is installed (a fresh install picks up the newest, and the test compares bytes)."""

    mime_headers = property(
        lambda self: [(name, value) for name, value in Catalog.mime_headers.fget(self) if name != "Generated-By"],
        Catalog.mime_headers.fset)


def extract() -> Catalog:
    """Every marked string of the package, and the samples' descriptions and notes, with where they are used."""
    template = Catalog(project="attn-tui", fuzzy=False)
    for filename, lineno, message, comments, context in extract_from_dir(
            str(PACKAGE), METHODS, keywords=KEYWORDS, comment_tags=("TRANSLATORS:",), strip_comment_tags=True):
        template.add(message, None, [(f"attn_tui/{filename}", lineno)], auto_comments=comments, context=context)
    for path in sorted(SAMPLES.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        for key in ("description", "notes"):
            if data.get(key):
                template.add(data[key], None, [(f"samples/{path.name}", 0)])
    return template


def korean() -> Catalog:
    with KOREAN.open("rb") as handle:
        catalog = read_po(handle, locale="ko")
    catalog.__class__ = Unversioned  # read_po makes a plain Catalog: only its header is told apart
    return catalog


def missing(template: Catalog, catalog: Catalog) -> list[str]:
    """Marked strings without a Korean translation (absent, empty or fuzzy)."""
    out = []
    for message in template:
        if not message.id:
            continue
        found = catalog.get(message.id, message.context)
        strings = () if found is None else (found.string if isinstance(found.string, tuple) else (found.string,))
        if found is None or found.fuzzy or not all(strings):
            out.append(message.id if isinstance(message.id, str) else message.id[0])
    return out


def compiled(catalog: Catalog) -> bytes:
    buffer = io.BytesIO()
    write_mo(buffer, catalog, use_fuzzy=False)
    return buffer.getvalue()


def update() -> None:
    template = extract()
    catalog = korean() if KOREAN.exists() else Unversioned(
        locale="ko", project="attn-tui", copyright_holder="the attn-tui developers", fuzzy=False,
        last_translator="the attn-tui developers", language_team="Korean")
    created = catalog.creation_date
    catalog.update(template, no_fuzzy_matching=True)
    catalog.creation_date, catalog.fuzzy = created, False  # no churn in the header
    catalog.header_comment = HEADER
    with KOREAN.open("wb") as handle:
        write_po(handle, catalog, width=100, ignore_obsolete=True)
    COMPILED.write_bytes(compiled(korean()))
    for message in missing(template, korean()):
        print(f"no Korean yet: {message!r}")


def merge(path: Path) -> None:
    """Write Korean for many strings at once; a key "context\x04English" sets a pgettext entry."""
    import json

    catalog = korean()
    for key, string in json.loads(path.read_text(encoding="utf-8")).items():
        context, _, message = key.rpartition("\x04")
        found = catalog.get(message, context or None)
        if found is None:
            catalog.add(message, string, context=context or None)
        else:  # Korean has one plural form: a plural entry holds it as a one-element tuple
            found.string = (string,) if found.pluralizable else string
            found.flags = found.flags - {"fuzzy"}
    with KOREAN.open("wb") as handle:
        write_po(handle, catalog, width=100, ignore_obsolete=True)
    update()


def check() -> int:
    template, catalog = extract(), korean()
    problems = [f"no Korean: {m!r}" for m in missing(template, catalog)]
    if not COMPILED.exists() or COMPILED.read_bytes() != compiled(catalog):
        problems.append(f"{COMPILED.relative_to(ROOT)} is stale: run python tools/catalog.py")
    print("\n".join(problems) or "catalogs complete")
    return 1 if problems else 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--merge", type=Path, metavar="FILE.json")
    args = parser.parse_args()
    sys.exit(check() if args.check else merge(args.merge) if args.merge else update())
