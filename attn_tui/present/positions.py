"""Where the user is in a trace: a flat list of (stage, decoder step) positions and the bar's window.

A variant or a real model's head has one position per stage. A seq2seq decode repeats its
stages once per decoder step, so stepping runs query … context of step t, then step t+1,
and ends on the whole alignment; the stage bar shows only the current step's stages.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    from attn_tui.core.stage import Trace

Position = tuple[str, Optional[int]]  # (stage name, decoder step or None)


def positions(trace: Trace) -> list[Position]:
    """Every place the arrows can go, in order (layer and head are chosen apart from these)."""
    steps = trace.steps()
    if not steps:
        return [(name, None) for name in trace.names()]
    per_step = list(dict.fromkeys(s.name for s in trace if s.step == 0))
    after = list(dict.fromkeys(s.name for s in trace if s.step is None))
    return [(name, t) for t in range(steps) for name in per_step] + [(name, None) for name in after]


def bar_window(places: list[Position], index: int) -> list[int]:
    """The positions the stage bar lists (and the digits jump to) while at `index`.

    All of them for a single attention; for a decode, the current step's stages (the last
    step's while on the alignment) followed by the stages that come after every step.
    """
    if not places or all(step is None for _, step in places):
        return list(range(len(places)))
    index = max(0, min(index, len(places) - 1))
    step = places[index][1]
    if step is None:
        step = max(s for _, s in places if s is not None)
    return [n for n, (_, s) in enumerate(places) if s == step or s is None]


def same_place(places: list[Position], previous: Position | None) -> int | None:
    """The index of `previous` in a new trace's positions, or of its stage at the nearest step."""
    if previous is None or not places:
        return None
    if previous in places:
        return places.index(previous)
    name, step = previous
    candidates = [n for n, (other, s) in enumerate(places) if other == name]
    if not candidates:
        return None
    if step is None:
        return candidates[0]  # from a single attention into a decode: its first step
    return min(candidates, key=lambda n: abs((places[n][1] or 0) - step))
