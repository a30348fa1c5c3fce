"""The head atlas as a view-model: every head's strongest role, its score, the legend, the ranking and the filter.

Textual-free and Rich-free: render/atlas.py draws it, tui/screens/atlas.py moves through it. The
scores come from attention/head_roles.py (TransformerLens's `detect_head` for the three token
patterns); this module only decides which role a head reads as. A role counts when its score reaches
its threshold, and a head reads as the role whose score stands furthest above its threshold
(score / threshold); a head with no score at its threshold reads as `mixed`. The thresholds sit above
what most heads of minilm and smollm2 score on a plain sentence (their 90th percentiles), so a coloured
cell is a head that stands out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import N_, NP_, _, pgettext

if TYPE_CHECKING:
    from attn_tui.trace.model_stats import HeadRoles
    from attn_tui.trace.shown import Shown

ROLES = ("previous_token", "duplicate_token", "induction", "sink", "local", "broad")
ROW_FIELDS = ("layer", "head", "role", *(f"score_{r}" for r in ROLES), "entropy", "moved")  # an exported head
MIXED = "mixed"
MOVED = "moved"  # the ranking by what each head moved into the residual stream (HeadRoles.moved), not a role
THRESHOLDS = {"previous_token": 0.4, "duplicate_token": 0.25, "induction": 0.25, "sink": 0.6, "local": 0.7,
              "broad": 0.8}
TITLES = {"previous_token": NP_("role", "previous-token"), "duplicate_token": NP_("role", "duplicate-token"),
          "induction": NP_("role", "induction"), "sink": NP_("role", "sink"), "local": NP_("role", "local"),
          "broad": NP_("role", "broad"), MIXED: NP_("role", "mixed")}
CODES = {"previous_token": "PR", "duplicate_token": "DU", "induction": "IN", "sink": "SK", "local": "LO",
         "broad": "BR", MIXED: "··"}  # two cells each, in either language (pgettext "atlas code")
MEANINGS = {
    "previous_token": N_("attends to the token just before (A[i, i−1])"),
    "duplicate_token": N_("attends to earlier copies of the same token"),
    "induction": N_("attends to the token after an earlier copy of the current one"),
    "sink": N_("parks its attention on the first token"),
    "local": N_("keeps its attention within ±2 positions"),
    "broad": N_("spreads its attention evenly (entropy near its most)"),
    MIXED: N_("no score at its threshold (grey; its code: the role it comes closest to)"),
}
_CODE_MARKS = (pgettext("atlas code", "PR"), pgettext("atlas code", "DU"), pgettext("atlas code", "IN"),
               pgettext("atlas code", "SK"), pgettext("atlas code", "LO"), pgettext("atlas code", "BR"))
del _CODE_MARKS  # marked for the catalog; `code` translates them when drawn


def title(role: str) -> str:
    return pgettext("role", TITLES[role])


def code(role: str) -> str:
    """A role's two-cell code in the cells (`IN`, 유 in Korean)."""
    return CODES[MIXED] if role == MIXED else pgettext("atlas code", CODES[role])


def role_score(roles: HeadRoles, role: str) -> float:
    """One head's score on an atlas role: `broad` is its breadth, the others its role scores."""
    return roles.breadth if role == "broad" else roles.scores[role]


def strongest(scores: dict[str, float]) -> str:
    """The role furthest above its threshold (score / threshold), or MIXED when none reaches it."""
    above = [(scores[r] / THRESHOLDS[r], r) for r in ROLES if scores[r] >= THRESHOLDS[r]]
    return max(above)[1] if above else MIXED


@dataclass(frozen=True)
class AtlasCell:
    """One head: its role, the score shown for it, and every role's score (the detail line)."""

    layer: int
    head: int
    role: str  # one of ROLES, or MIXED
    scores: dict[str, float]  # every ROLES score, 0…1
    entropy: float  # mean row entropy, nats
    moved: float | None = None  # mean ‖Σ_j A[i,j] v_j W_O‖ per query row; None where no `moved` stage was traced

    @property
    def leaning(self) -> str:
        """The role closest to its threshold (score / threshold): the strongest one, or what a mixed head leans to."""
        return max(ROLES, key=lambda r: self.scores[r] / THRESHOLDS[r])

    @property
    def score(self) -> float:
        """The strongest role's score (a mixed head: the score of the role it leans to)."""
        return self.scores[self.leaning]

    def shown(self, role: str | None) -> ShownCell:
        """What the cell shows: its role's code and score (a mixed head, grey, the role it leans to), or under a
        filter the filtered role's score beside the head's own code, `dim` where its role is another."""
        if role is None:
            return ShownCell(code(self.leaning), score_text(self.score), self.role, self.score, False)
        value = self.scores[role]
        return ShownCell(code(self.leaning), score_text(value), role, value, self.role != role)


@dataclass(frozen=True)
class ShownCell:
    """A cell as drawn: its code, score text, colour key (a role), colour strength 0…1 and whether it dims."""

    code: str
    text: str
    colour: str
    strength: float
    dim: bool


def score_text(value: float) -> str:
    """Three characters: `.82`, `1.0` (a score of 0.995 or more), `.00`."""
    return "1.0" if value >= 0.995 else f"{max(value, 0.0):.2f}"[1:]


@dataclass(frozen=True)
class Atlas:
    """Every head of one run: layers × heads cells, layer-major, and what the header says."""

    name: str
    layers: int
    heads: int
    tokens: int
    cells: tuple[AtlasCell, ...]

    def cell(self, layer: int, head: int) -> AtlasCell:
        return self.cells[layer * self.heads + head]

    @property
    def has_moved(self) -> bool:
        """Whether every head knows what it moved (a model's run with `moved` stages), so MOVED can rank them."""
        return all(c.moved is not None for c in self.cells)

    def ranking(self, role: str | None) -> list[AtlasCell]:
        """Heads by `role`'s score, highest first; MOVED: by what each head moved (the size of its output, which
        a weight pattern alone does not tell); None: by how far each head's strongest role stands above its
        threshold (score / threshold), so mixed heads come last."""
        if role == MOVED:
            return sorted(self.cells, key=lambda c: (-(c.moved or 0.0), c.layer, c.head))
        if role is not None:
            return sorted(self.cells, key=lambda c: (-c.scores[role], c.layer, c.head))
        return sorted(self.cells, key=lambda c: (-c.score / THRESHOLDS[c.leaning], c.layer, c.head))

    def rows(self) -> list[dict[str, object]]:
        """Each head as one flat row, layer-major, under the ROW_FIELDS: what an export of the atlas writes (its
        role, every role's score, its mean entropy and, where traced, what it moved)."""
        return [dict(zip(ROW_FIELDS, (c.layer, c.head, c.role, *(c.scores[r] for r in ROLES), c.entropy, c.moved),
                         strict=True)) for c in self.cells]

    def counts(self) -> dict[str, int]:
        """How many heads read as each role (and as mixed)."""
        found = dict.fromkeys((*ROLES, MIXED), 0)
        for c in self.cells:
            found[c.role] += 1
        return found


def atlas_of(name: str, roles: Sequence[HeadRoles], layers: int, heads: int, tokens: int) -> Atlas:
    """The atlas of a run whose heads' scores are `roles` (layer-major, as ModelStats.roles holds them)."""
    if len(roles) != layers * heads:
        raise ValueError(f"{len(roles)} heads' roles for {layers} × {heads} heads")
    cells = []
    for r in roles:
        scores = {role: role_score(r, role) for role in ROLES}
        cells.append(AtlasCell(r.layer, r.head, strongest(scores), scores, r.scores["entropy"], r.moved))
    return Atlas(name, layers, heads, tokens, tuple(cells))


def atlas_for(shown: Shown) -> Atlas | None:
    """The atlas of what is on show: a model's roles as the door computed them, an attention variant's through
    the same function (attention/head_roles.py) over its heads' weights; None where the rows are not the keys
    (a decode's steps, cross-attention) or the trace has no weights stage (flash's tiles).

    Imports torch for a variant: call it from a worker.
    """
    trace = shown.trace
    roles: Sequence[HeadRoles] = shown.stats.roles if shown.stats is not None else ()
    if shown.stats is None:
        from attn_tui.trace.written import grows

        n = len(trace.key_tokens)
        if grows(trace) or len(trace.query_tokens) != n or trace.find("weights") is None:
            return None
        from attn_tui.attention.head_roles import head_roles
        from attn_tui.attention.summary import real_keys, stack

        weights = stack(trace)  # (layers, heads, N, N)
        roles = head_roles(weights, trace.key_tokens, real_keys(trace))
    if not roles:
        return None
    return atlas_of(trace.meta.title, roles, trace.layers, trace.heads, len(trace.key_tokens))


def detail(cell: AtlasCell) -> str:
    """The line under the grid: the head under the cursor, every score, its entropy."""
    parts = [f"{title(r)} {cell.scores[r]:.2f}" for r in ROLES]
    if cell.moved is not None:
        parts.append(_("moved {value}").format(value=f"{cell.moved:.3g}"))
    return _("layer {layer} head {head}: {role} · {scores} · entropy {entropy} nats").format(
        layer=cell.layer, head=cell.head, role=title(cell.role), scores=" · ".join(parts),
        entropy=f"{cell.entropy:.2f}")


def legend_rows() -> list[tuple[str, str, str, str]]:
    """(role key, code, title, threshold text) for each role, then mixed."""
    rows = [(r, code(r), title(r), f"≥{THRESHOLDS[r]:.2f}") for r in ROLES]
    return [*rows, (MIXED, code(MIXED), title(MIXED), "")]


def legend_note() -> str:
    return _("each cell: its strongest role and score (the role furthest above its threshold); grey: mixed, no "
             "role at its threshold")


def meaning(role: str) -> str:
    return _(MEANINGS[role])


@dataclass
class AtlasPosition:
    """Where the user is in the atlas, kept between openings: the cursor, the role filter, the ranking and
    whether B's atlas stands beside A's."""

    layer: int = 0
    head: int = 0
    role: str | None = None  # the filter: None shows each head's own role
    ranked: bool = False  # the ranking list instead of the grid
    by_moved: bool = False  # the ranking by what each head moved, not by the filtered role's score
    comparing: bool = False

    def place(self, atlas: Atlas, layer: int, head: int) -> None:
        """Put the cursor on (layer, head), kept inside the atlas."""
        self.layer = max(0, min(layer, atlas.layers - 1))
        self.head = max(0, min(head, atlas.heads - 1))

    def move(self, atlas: Atlas, d_layer: int, d_head: int) -> None:
        """Arrows: in the grid, a layer or a head over; in the ranking, the next or previous head listed."""
        if self.ranked:
            order = [(c.layer, c.head) for c in self.ranking(atlas)]
            at = order.index((self.layer, self.head)) if (self.layer, self.head) in order else 0
            self.layer, self.head = order[max(0, min(len(order) - 1, at + d_layer + d_head))]
            return
        self.place(atlas, self.layer + d_layer, self.head + d_head)

    def cycle_role(self, step: int = 1) -> str | None:
        """The next role to filter by: none, then each role in turn, then none again."""
        choices: list[str | None] = [None, *ROLES]
        self.role = choices[(choices.index(self.role) + step) % len(choices)]
        return self.role

    @property
    def order(self) -> str | None:
        """What the ranking sorts by: MOVED, the filtered role, or None (each head's strongest role)."""
        return MOVED if self.by_moved else self.role

    def ranking(self, atlas: Atlas) -> list[AtlasCell]:
        return atlas.ranking(self.order)

    def cycle_rank(self, atlas: Atlas) -> None:
        """o: the grid, then the ranking by the role's score, then (where the heads know it) by what they moved,
        then the grid again."""
        if not self.ranked:
            self.ranked, self.by_moved = True, False
        elif not self.by_moved and atlas.has_moved:
            self.by_moved = True
        else:
            self.ranked = self.by_moved = False

    def to_top(self, atlas: Atlas) -> None:
        """The ranking opens (or its role changes) on its first head."""
        top = self.ranking(atlas)[0]
        self.layer, self.head = top.layer, top.head

    def rank_of(self, atlas: Atlas) -> int:
        """The cursor's place in `atlas`'s ranking, from 0 (0 where that atlas has no such head: B's, smaller)."""
        order = [(c.layer, c.head) for c in self.ranking(atlas)]
        return order.index((self.layer, self.head)) if (self.layer, self.head) in order else 0
