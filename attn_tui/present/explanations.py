"""Two or three sentences per stage: what the stage does and why, in the language on show.

The English lives in the stage catalog (`attn_tui.trace.catalog`), with its own text where
a run does the step its own way (the scores of additive attention are not a dot product).
A run names its keys, most specific first (a trace's `meta.explains`, e.g. ("decoder",
"additive")): the decoder's own text wins, then the attention kind's.
"""

from __future__ import annotations

from attn_tui.i18n import _
from attn_tui.trace.catalog import KINDS, kind_of


def explanation(stage: str, keys: tuple[str, ...]) -> str:
    """The explanation of `stage` for a run whose explanation keys are `keys` (most specific first),
    in the language on show."""
    entry = kind_of(stage).explanation_for(keys)
    return _(entry) if entry else ""


def stage_names() -> set[str]:
    """Every stage name that has an explanation (overrides folded in)."""
    return {name for name, kind in KINDS.items() if kind.explanation or kind.by_run}
