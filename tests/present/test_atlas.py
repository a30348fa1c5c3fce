"""The head atlas's view-model: roles from hand-built heads, thresholds, the filter, the ranking, the cursor, and
what the grid takes on an 80-column terminal (smollm2's 30 × 9 heads, Gemma 3's 18 × 4) in both languages."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest
import torch
from rich.cells import cell_len
from rich.console import Console

from attn_tui import i18n
from attn_tui.attention.head_roles import head_roles
from attn_tui.present.atlas import (
    MIXED,
    MOVED,
    ROLES,
    THRESHOLDS,
    Atlas,
    AtlasPosition,
    atlas_for,
    atlas_of,
    code,
    detail,
    legend_rows,
    score_text,
    strongest,
    title,
)
from attn_tui.render.atlas import atlas_grid, cell_width, grid_header, legend, ranking_table
from attn_tui.trace.model_stats import HeadRoles

N = 12
TOKENS = [5, 9, 2, 7, 1, 4, 5, 9, 2, 7, 1, 4]  # a sequence repeated twice: the induction probe's shape


def _rows(pattern: torch.Tensor) -> torch.Tensor:
    """A causal row-stochastic (N, N) pattern: each row's pattern, or key 0 where the pattern gives it nothing."""
    a = pattern.clone().double()
    for i in range(N):
        if a[i].sum() == 0:
            a[i, 0] = 1.0
    return a / a.sum(-1, keepdim=True)


def _heads() -> torch.Tensor:
    """(1, 5, N, N): a previous-token head, an induction head, a sink head, a uniform causal head and a head that
    is half previous-token, half sink at the roles' edges (mixed)."""
    previous = torch.zeros(N, N)
    previous[torch.arange(1, N), torch.arange(N - 1)] = 1
    induction = torch.zeros(N, N)
    for i in range(N):
        for j in range(1, i + 1):
            if TOKENS[j - 1] == TOKENS[i] and j - 1 < i:
                induction[i, j] = 1
    sink = torch.zeros(N, N)
    sink[:, 0] = 1
    uniform = torch.ones(N, N).tril()
    far = torch.zeros(N, N)  # three back and the first token: neither role reaches its threshold
    for i in range(3, N):
        far[i, i - 3] += 0.7
        far[i, 0] += 0.3
    return torch.stack([_rows(p) for p in (previous, induction, sink, uniform, far)])[None]


def _atlas() -> Atlas:
    return atlas_of("hand-built", head_roles(_heads(), TOKENS), 1, 5, N)


def test_hand_built_heads_read_as_their_roles() -> None:
    atlas = _atlas()
    assert [c.role for c in atlas.cells] == ["previous_token", "induction", "sink", "broad", MIXED]
    assert atlas.cell(0, 0).scores["previous_token"] == pytest.approx(11 / 12)  # row 0 has no key before it
    assert atlas.cell(0, 2).scores["sink"] == pytest.approx(1.0)
    # Uniform over what it may see: each row at its most, but row 0 had one key to choose and counts as 0.
    assert atlas.cell(0, 3).scores["broad"] == pytest.approx(11 / 12)
    # The induction head's score is Σ(A ⊙ P) / ΣA over the whole sequence: the first half has no earlier copy.
    assert atlas.cell(0, 1).scores["induction"] == pytest.approx(6 / 12)
    assert atlas.counts() == {"previous_token": 1, "duplicate_token": 0, "induction": 1, "sink": 1, "local": 0,
                              "broad": 1, MIXED: 1}


def test_the_strongest_role_is_the_one_furthest_above_its_threshold() -> None:
    scores = dict.fromkeys(ROLES, 0.0)
    assert strongest(scores) == MIXED
    at_edge = {**scores, "induction": THRESHOLDS["induction"]}
    assert strongest(at_edge) == "induction"  # a score at its threshold counts
    just_below = {**scores, "induction": THRESHOLDS["induction"] - 1e-6}
    assert strongest(just_below) == MIXED
    # A previous-token head is local too; the role that stands further above its threshold wins.
    both = {**scores, "previous_token": 0.9, "local": 0.95}
    assert 0.9 / THRESHOLDS["previous_token"] > 0.95 / THRESHOLDS["local"] and strongest(both) == "previous_token"


def test_a_mixed_head_shows_the_role_it_leans_to_in_grey() -> None:
    cell = _atlas().cell(0, 4)
    shown = cell.shown(None)
    assert cell.role == MIXED and shown.colour == MIXED
    assert cell.leaning == max(ROLES, key=lambda r: cell.scores[r] / THRESHOLDS[r])
    assert shown.code == code(cell.leaning) and shown.text == score_text(cell.scores[cell.leaning])


def test_the_filter_shows_that_roles_score_in_every_cell_and_dims_the_others() -> None:
    atlas = _atlas()
    for cell in atlas.cells:
        shown = cell.shown("sink")
        assert shown.colour == "sink" and shown.strength == cell.scores["sink"]
        assert shown.text == score_text(cell.scores["sink"])
        assert shown.dim == (cell.role != "sink")


def test_score_text_is_three_characters() -> None:
    assert [score_text(v) for v in (0.0, 0.047, 0.82, 0.994, 0.995, 1.0)] == [".00", ".05", ".82", ".99", "1.0",
                                                                                "1.0"]


def test_the_ranking_puts_the_top_heads_first() -> None:
    atlas = _atlas()
    by_sink = atlas.ranking("sink")
    assert by_sink[0].head == 2
    assert [c.scores["sink"] for c in by_sink] == sorted((c.scores["sink"] for c in by_sink), reverse=True)
    own = atlas.ranking(None)
    assert own[-1].role == MIXED  # no role at its threshold: last
    strengths = [c.score / THRESHOLDS[c.leaning] for c in own]
    assert strengths == sorted(strengths, reverse=True)


def test_the_cursor_moves_in_the_grid_and_along_the_ranking() -> None:
    atlas = atlas_of("grid", head_roles(_heads().expand(3, 5, N, N), TOKENS), 3, 5, N)
    position = AtlasPosition()
    position.move(atlas, -1, -1)
    assert (position.layer, position.head) == (0, 0)  # kept inside
    position.move(atlas, 5, 2)
    assert (position.layer, position.head) == (2, 2)
    position.role, position.ranked = "previous_token", True
    position.to_top(atlas)
    order = [(c.layer, c.head) for c in atlas.ranking("previous_token")]
    assert (position.layer, position.head) == order[0] and position.rank_of(atlas) == 0
    position.move(atlas, 1, 0)
    assert (position.layer, position.head) == order[1]
    position.move(atlas, -5, 0)
    assert (position.layer, position.head) == order[0]
    position.place(atlas, 2, 4)
    assert position.rank_of(_atlas()) == 0  # a smaller atlas (B's) has no layer 2: its ranking starts at the top


def test_the_filter_cycles_through_every_role_and_back() -> None:
    position = AtlasPosition()
    seen = [position.cycle_role() for _ in range(len(ROLES) + 1)]
    assert seen == [*ROLES, None]
    assert position.cycle_role(-1) == ROLES[-1]


def test_atlas_of_refuses_a_count_that_is_not_layers_times_heads() -> None:
    with pytest.raises(ValueError, match="5 heads' roles for 2 × 5"):
        atlas_of("x", head_roles(_heads(), TOKENS), 2, 5, N)


def test_a_variants_atlas_is_read_from_its_own_weights() -> None:
    """multihead: the roles computed from each head's weights stage, checked against the formulas in float64."""
    from attn_tui.ask.samples import load_samples
    from attn_tui.ask.settings import SentenceInput, VariantAsk
    from attn_tui.sources import run

    request = load_samples()["korean"].request
    request = VariantAsk(SentenceInput("a b a b c a b"), replace(request.settings, variant="multihead", heads=4))
    shown = run(request, None)
    atlas = atlas_for(shown)
    assert atlas is not None and (atlas.layers, atlas.heads, atlas.tokens) == (1, 4, 7)
    tokens = shown.trace.key_tokens
    for h in range(4):
        a = shown.trace.tensor("weights", None, h).double()  # (N, N)
        total = a.sum()
        previous = sum(a[i, i - 1] for i in range(1, 7)) / total
        duplicate = sum(a[i, j] for i in range(7) for j in range(i) if tokens[j] == tokens[i]) / total
        induction = sum(a[i, j] for i in range(7) for j in range(1, i + 1) if tokens[j - 1] == tokens[i]) / total
        cell = atlas.cell(0, h)
        assert cell.scores["previous_token"] == pytest.approx(float(previous), abs=1e-5)
        assert cell.scores["duplicate_token"] == pytest.approx(float(duplicate), abs=1e-5)
        assert cell.scores["induction"] == pytest.approx(float(induction), abs=1e-5)
        assert cell.scores["sink"] == pytest.approx(float(a[:, 0].mean()), abs=1e-5)


def test_flash_has_no_atlas() -> None:
    """flash's steps are key tiles, not a weights stage: no roles to read."""
    from attn_tui.ask.samples import load_samples
    from attn_tui.ask.settings import VariantAsk
    from attn_tui.sources import run

    request = load_samples()["korean"].request
    shown = run(VariantAsk(request.source, replace(request.settings, variant="flash")), None)
    assert shown.trace.find("weights") is None and atlas_for(shown) is None


def _big(layers: int, heads: int) -> Atlas:
    generator = torch.Generator().manual_seed(0)
    roles = tuple(HeadRoles(n, h, {r: float(torch.rand(1, generator=generator)) for r in (*ROLES[:-1], "entropy")},
                            float(torch.rand(1, generator=generator)))
                  for n in range(layers) for h in range(heads))
    return atlas_of("big", roles, layers, heads, 20)


def _lines(renderable: object, width: int = 80) -> list[str]:
    console = Console(width=width, record=True, file=io.StringIO(), color_system=None)
    console.print(renderable)
    return console.export_text().splitlines()


@pytest.mark.parametrize("language", ["en", "ko"])
@pytest.mark.parametrize(("layers", "heads"), [(30, 9), (18, 4)])
def test_the_grid_fits_80_columns(language: str, layers: int, heads: int) -> None:
    """smollm2's and Gemma 3's grids, measured in terminal cells (Korean codes are two cells wide); the screen
    scrolls the rows."""
    before = i18n.language()
    i18n.set_language(language)
    try:
        atlas = _big(layers, heads)
        lines = [*_lines(grid_header(atlas, AtlasPosition()), width=200),
                 *_lines(atlas_grid(atlas, AtlasPosition()), width=200)]
        assert max(cell_len(line.rstrip()) for line in lines) <= 76  # inside the screen's 80, scrollbar and all
        assert len(lines) == layers + 1  # the heads' names, then one line a layer: none wraps
        assert 4 + heads * cell_width() <= 76
        assert lines[0].split() == [f"h{h}" for h in range(heads)]
        assert [lines[0].index(f"h{h}") for h in range(heads)] == [4 + h * cell_width() for h in range(heads)]
        for layer, line in enumerate(lines[1:]):
            assert line.startswith(f"L{layer}")
            for h in range(heads):
                shown = atlas.cell(layer, h).shown(None)
                assert shown.code + shown.text in line
        ranking = _lines(ranking_table(atlas, AtlasPosition(role="induction", ranked=True)), width=200)
        assert max(cell_len(line.rstrip()) for line in ranking) <= 76
    finally:
        i18n.set_language(before)


@pytest.mark.parametrize("language", ["en", "ko"])
def test_the_legend_names_every_role_and_its_threshold(language: str) -> None:
    before = i18n.language()
    i18n.set_language(language)
    try:
        atlas = _atlas()
        text = "\n".join(_lines(legend(atlas)))
        for _role, role_code, name, threshold in legend_rows():
            assert role_code in text and name in text and threshold in text
            assert cell_len(role_code) == 2
        assert title("induction") == ("유도" if language == "ko" else "induction")
        line = detail(atlas.cell(0, 1))
        assert all(title(r) in line for r in ROLES)
    finally:
        i18n.set_language(before)


def _moved_atlas() -> Atlas:
    """The hand-built heads with what each moved: the size of its output, A·V, over random values of its own."""
    weights = _heads()[0]  # (5, N, N)
    values = torch.randn(5, N, 4, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    values[1] *= 10  # the induction head writes big values
    moved = (weights @ values).norm(dim=-1).mean(-1)  # (5,) mean over query rows of ‖Σ_j A[i,j] v_j‖
    roles = [replace(r, moved=float(m)) for r, m in zip(head_roles(_heads(), TOKENS), moved, strict=True)]
    return atlas_of("moved", roles, 1, 5, N)


def test_the_ranking_by_moved_puts_the_head_that_moved_most_first() -> None:
    atlas = _moved_atlas()
    assert atlas.has_moved and not _atlas().has_moved
    by_moved = atlas.ranking(MOVED)
    assert by_moved[0].head == 1
    assert [c.moved for c in by_moved] == sorted((c.moved or 0.0 for c in by_moved), reverse=True)
    assert "moved" in detail(atlas.cell(0, 1)) and "moved" not in detail(_atlas().cell(0, 1))


def test_o_cycles_grid_score_ranking_moved_ranking_and_back() -> None:
    atlas, position = _moved_atlas(), AtlasPosition(role="sink")
    seen = []
    for _ in range(3):
        position.cycle_rank(atlas)
        if position.ranked:
            position.to_top(atlas)
        seen.append((position.ranked, position.order, (position.layer, position.head)))
    assert seen[0] == (True, "sink", (0, 2))
    assert seen[1] == (True, MOVED, (0, 1))
    assert seen[2][:2] == (False, "sink")
    plain = AtlasPosition()  # a variant's atlas knows no `moved`: o toggles grid ↔ ranking
    plain.cycle_rank(_atlas())
    plain.cycle_rank(_atlas())
    assert not plain.ranked and not plain.by_moved


def test_the_moved_ranking_table_says_moved_and_lists_the_biggest_first() -> None:
    atlas = _moved_atlas()
    position = AtlasPosition(ranked=True, by_moved=True)
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(ranking_table(atlas, position))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "moved" in text.splitlines()[0]
    rows = [line for line in text.splitlines() if line.strip().startswith("1 ")]
    assert rows and "L0 h1" in rows[0]


def test_the_unfiltered_ranking_shows_the_number_it_sorts_by() -> None:
    atlas = _atlas()
    lines = _lines(ranking_table(atlas, AtlasPosition(ranked=True)), width=200)
    assert "÷ threshold" in lines[0]
    shown = [float(line.split()[-2]) for line in lines[2:] if line.strip()]  # the column before the bar
    expected = [cell.score / THRESHOLDS[cell.leaning] for cell in atlas.ranking(None)]
    assert shown == pytest.approx(expected, abs=0.006) and shown == sorted(shown, reverse=True)
    filtered = _lines(ranking_table(atlas, AtlasPosition(role="induction", ranked=True)), width=200)
    assert "÷ threshold" not in filtered[0]  # sorted by the role's own score, which is the number shown
