"""What a stage name means wherever it is drawn (`StageKind`), kept apart from the catalog that lists every kind
(catalog.py) and from the variants that declare their own kinds, so that every list reads it from one place."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

ColourScale = Literal["sequential", "diverging", "probability"]


@dataclass(frozen=True)
class StageKind:
    """What a stage name means wherever it is drawn.

    `colour_scale`: "probability" for stages whose rows sum to 1 (drawn on the fixed 0…1; their
    rows are checked), "sequential" for stages that are never negative (drawn dark to
    bright from their minimum), "diverging" for signed values (symmetric about 0 when any
    value is negative, so the sign reads before the size).
    """

    name: str
    symbol: str  # what formulas call it (Q, K, S'); a kind without a letter of its own goes by its name
    title: str  # English message id in the context "stage"
    explanation: str = ""  # English message id; "" when there is nothing to say
    colour_scale: ColourScale = "diverging"
    by_run: Mapping[str, str] = field(default_factory=dict)  # explanation key of a run -> its own explanation

    @property
    def probability(self) -> bool:
        """Rows sum to 1 (or less: what a sink took; 0 for a row that may attend to nothing)."""
        return self.colour_scale == "probability"

    def explanation_for(self, keys: tuple[str, ...]) -> str:
        """The English explanation for a run whose explanation keys are `keys`, most specific first."""
        return next((self.by_run[key] for key in keys if key in self.by_run), self.explanation)
