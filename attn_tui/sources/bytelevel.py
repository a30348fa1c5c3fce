"""Labels for byte-level BPE tokens (GPT-2, SmolLM2) that hold only part of a character.

Such a tokenizer spells each byte as a printable stand-in ('Ġ' for a space, 'ë' for
0xEB); a Korean syllable is three bytes and often three tokens, each of which alone
decodes to '�'. These turn a token back into its bytes and show what they are: the text
where the bytes are whole characters, `<EB>` for a byte that is part of one.
"""

from __future__ import annotations

import codecs
from functools import cache


def _hex(error: UnicodeError) -> tuple[str, int]:
    """A decoding error's bytes as `<XX>` each, and where to go on."""
    assert isinstance(error, UnicodeDecodeError)
    return "".join(f"<{b:02X}>" for b in error.object[error.start:error.end]), error.end


codecs.register_error("attn_tui_hex", _hex)


@cache
def _byte_of() -> dict[str, int]:
    """GPT-2's table of printable stand-ins, inverted: stand-in character → byte."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars = list(printable)
    extra = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + extra)
            extra += 1
    return {chr(c): b for b, c in zip(printable, chars)}


def byte_label(token: str) -> str | None:
    """The token's bytes as text, with `<XX>` for bytes that do not form a whole character; None when the
    token is not spelt in the byte-level alphabet."""
    table = _byte_of()
    if not token or any(ch not in table for ch in token):
        return None
    return bytes(table[ch] for ch in token).decode("utf-8", errors="attn_tui_hex")
