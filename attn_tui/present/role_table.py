"""Every head's strongest role (previous-token, duplicate-token, induction, sink, local, broad) as plain data.

What `attn-tui heads --format table` draws (render/role_table.py): layers down, heads across, each head
named by its strongest role with that role's score. A head is named by one of the four token-pattern roles
(previous-token, duplicate-token, induction, sink) when at least half its attention follows that role's
pattern (ROLE_NAMING), the highest such; else `local` when half of it stays within ±2 positions; else
`broad`, scored by its breadth (attention/head_roles.py says how each score is computed).
"""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.i18n import NP_, pgettext
from attn_tui.trace.model_stats import HeadRoles

ROLE_NAMING = 0.5  # the share of a head's attention a role must hold to name it
PATTERN_ROLES = ("previous_token", "duplicate_token", "induction", "sink")
ROLE_LABELS = {"previous_token": NP_("role", "previous token"), "duplicate_token": NP_("role", "duplicate token"),
               "induction": NP_("role", "induction"), "sink": NP_("role", "sink"), "local": NP_("role", "local"),
               "broad": NP_("role", "broad")}
ROLE_SHORT = {"previous_token": NP_("role", "prev"), "duplicate_token": NP_("role", "dup"),
              "induction": NP_("role", "ind"), "sink": NP_("role", "sink"), "local": NP_("role", "loc"),
              "broad": NP_("role", "brd")}


def strongest(roles: HeadRoles) -> tuple[str, float]:
    """(role, score): the role a head is named by, and its score on that role."""
    role, score = max(((name, roles.scores[name]) for name in PATTERN_ROLES), key=lambda pair: pair[1])
    if score >= ROLE_NAMING:
        return role, score
    if roles.scores["local"] >= ROLE_NAMING:
        return "local", roles.scores["local"]
    return "broad", roles.breadth


@dataclass(frozen=True)
class RoleCell:
    layer: int
    head: int
    role: str  # a key of ROLE_LABELS
    score: float

    @property
    def short(self) -> str:
        return pgettext("role", ROLE_SHORT[self.role])


@dataclass(frozen=True)
class RoleTable:
    """Every head named by its strongest role, layer-major, with the count of heads per role."""

    layers: int
    heads: int
    cells: tuple[RoleCell, ...]
    probe: str = ""  # the built-in probe the roles were read on ("" for a text)

    def cell(self, layer: int, head: int) -> RoleCell:
        return self.cells[layer * self.heads + head]

    def legend(self) -> list[tuple[str, str, int]]:
        """(role, its short and long name, how many heads it names) for each role, in ROLE_LABELS' order."""
        return [(role, f"{pgettext('role', ROLE_SHORT[role])} = {pgettext('role', label)}",
                 sum(c.role == role for c in self.cells)) for role, label in ROLE_LABELS.items()]


def role_table(roles: tuple[HeadRoles, ...], layers: int, heads: int, probe: str = "") -> RoleTable | None:
    """The table of `roles` (layer-major, as ModelStats holds them); None where there are none (a generation)."""
    if len(roles) != layers * heads:
        return None
    return RoleTable(layers, heads, tuple(RoleCell(r.layer, r.head, *strongest(r)) for r in roles), probe)
