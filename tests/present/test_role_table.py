"""Each head named by its strongest role: the rule, the counts, and the table in both languages."""

from __future__ import annotations

import pytest
import torch
from rich.cells import cell_len
from rich.console import Console

from attn_tui.attention.head_roles import head_roles
from attn_tui.i18n import language, set_language
from attn_tui.present.role_table import role_table, strongest
from attn_tui.render.role_table import print_role_table
from attn_tui.trace.model_stats import HeadRoles


def _roles(**scores: float) -> HeadRoles:
    base = dict.fromkeys(("previous_token", "duplicate_token", "induction", "sink", "local"), 0.0)
    return HeadRoles(0, 0, {**base, "entropy": 1.0, **scores}, 0.3)  # breadth 0.3


@pytest.mark.parametrize(("scores", "named"), [
    (dict(previous_token=0.9, local=0.95), ("previous_token", 0.9)),  # a pattern role before `local`, which holds it
    (dict(induction=0.6, duplicate_token=0.55), ("induction", 0.6)),
    (dict(sink=0.4, local=0.7), ("local", 0.7)),  # no pattern role holds half: mostly near the query
    (dict(sink=0.4, local=0.3), ("broad", 0.3)),  # nor local: broad, scored by its breadth
])
def test_a_head_is_named_by_the_strongest_role_holding_half(scores: dict[str, float],
                                                            named: tuple[str, float]) -> None:
    assert strongest(_roles(**scores)) == named


def test_hand_built_heads_are_named_by_their_roles_in_a_table_of_both_languages() -> None:
    half = [7, 2, 9, 4, 1, 8]
    tokens = half + half
    n = len(tokens)
    a = torch.zeros(1, 3, n, n)
    for i in range(n):
        a[0, 0, i, max(i - 1, 0)] = 1.0  # previous token
        a[0, 1, i, 0] = 1.0  # sink
        a[0, 2, i, i - len(half) + 1 if i >= len(half) else 0] = 1.0  # induction in the repeat
    rows = torch.arange(n) >= len(half)  # the probe's repeated half, as the door scores it
    table = role_table(head_roles(a, tokens, rows=rows), 1, 3, "induction")
    assert table is not None
    assert [(c.role, round(c.score, 6)) for c in table.cells] == [("previous_token", 1.0), ("sink", 1.0),
                                                                   ("induction", 1.0)]
    assert [count for _, _, count in table.legend()] == [1, 0, 1, 1, 0, 0]
    saved = language()
    try:
        for lang, words in (("en", ("prev 1.00", "ind 1.00", "induction probe")), ("ko", ("이전 1.00", "인덕 1.00"))):
            set_language(lang)
            console = Console(width=100, record=True)
            print_role_table(table, console)
            text = console.export_text()
            assert all(word in text for word in words), (lang, text)
            lines = [line for line in text.splitlines() if line.strip().startswith("0 ")]
            assert len(lines) == 1 and cell_len(lines[0]) <= 100
    finally:
        set_language(saved)
