"""Characters ↔ ids for the date model, with errors that name the unknown character."""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.errors import InputError
from attn_tui.i18n import Msg
from attn_tui.io.files import check_text
from attn_tui.models.seq2seq.dates import END, INPUT_CHARS, OUTPUT_CHARS, PAD, START

if TYPE_CHECKING:
    import torch

IN_ITOS = [PAD] + list(INPUT_CHARS)
OUT_ITOS = [PAD, START, END] + OUTPUT_CHARS
IN_STOI = {c: i for i, c in enumerate(IN_ITOS)}
OUT_STOI = {c: i for i, c in enumerate(OUT_ITOS)}
MAX_INPUT = 40
MAX_OUTPUT = 12


def encode_input(text: str) -> list[int]:
    """Input characters → ids; refuses empty input and characters the model never saw."""
    check_text(text, Msg("the date"))
    text = text.strip()
    if not text:
        raise InputError(Msg("the date is empty: type a date such as 22 November 2026"))
    if len(text) > MAX_INPUT:
        raise InputError(Msg("the date is {n} characters long; the model reads at most {max}", n=len(text),
                             max=MAX_INPUT))
    for column, ch in enumerate(text, start=1):
        if ch not in IN_STOI:
            raise InputError(Msg("column {column}: the model has never seen the character {ch}; it knows digits, "
                                 "English month and weekday names, 년 월 일 요일, spaces and , . / - ( ) '",
                                 column=column, ch=repr(ch)))
    return [IN_STOI[c] for c in text]


def encode_target(text: str) -> list[int]:
    """A target date → <s> ids </s>; refuses what the decoder could never write, and overlong targets."""
    check_target(text)
    return [OUT_STOI[START]] + [OUT_STOI[c] for c in text] + [OUT_STOI[END]]


def check_target(text: str) -> None:
    """Refuse a target the decoder could never write (torch-free: the command line checks before loading)."""
    if len(text) > MAX_OUTPUT - 1:
        raise InputError(Msg("the target is {n} characters long; the model writes at most {max} (targets look like "
                             "2026-11-22)", n=len(text), max=MAX_OUTPUT - 1))
    for column, ch in enumerate(text, start=1):
        if ch not in OUT_STOI:
            raise InputError(Msg("target column {column}: {ch} is not a digit or '-'; targets look like 2026-11-22",
                                 column=column, ch=repr(ch)))


def batch(pairs: list[tuple[str, str]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src (B, S) padded with 0, lengths (B,), tgt (B, T) = <s> … </s>)."""
    import torch

    srcs = [encode_input(s) for s, _ in pairs]
    tgts = [encode_target(t) for _, t in pairs]
    width = max(map(len, srcs))
    src = torch.tensor([s + [0] * (width - len(s)) for s in srcs])
    return src, torch.tensor([len(s) for s in srcs]), torch.tensor(tgts)
