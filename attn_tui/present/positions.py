"""Where the user is in a trace: a flat list of (stage, decoder step, module) positions and the bar's window.

A variant or a real model's head has one position per stage. A seq2seq decode repeats its
stages once per decoder step, so stepping runs query … context of step t, then step t+1,
and ends on the whole alignment; the stage bar shows only the current step's stages.
Stages made once before the steps (an encoder's self-attention) come first. A block with
several attentions (self and cross) lists each module's stages in turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple, Optional

from attn_tui.i18n import Msg
from attn_tui.present.titles import stage_title

if TYPE_CHECKING:
    from attn_tui.trace.ops import Place
    from attn_tui.trace.stage import Trace


class Position(NamedTuple):
    name: str
    step: Optional[int] = None  # a decoder step, or None
    module: Optional[str] = None  # which attention of the block, or None when there is one


def positions(trace: Trace) -> list[Position]:
    """Every place the arrows can go, in order (layer and head are chosen apart from these)."""
    # plain tuples while walking every stage (a model writing has thousands), a Position for each distinct one
    distinct = [Position(*key) for key in dict.fromkeys((p.name, p.step, p.module) for p in trace.stages)]
    steps = trace.steps()
    if not steps:
        return distinct
    first_step = next(n for n, p in enumerate(distinct) if p.step is not None)
    before = [p for p in distinct[:first_step] if p.step is None]
    per_step = list(dict.fromkeys((p.name, p.module) for p in distinct if p.step == 0))
    after = [p for p in distinct[first_step:] if p.step is None]
    stepped = [Position(name, t, module) for t in range(steps) for name, module in per_step]
    if trace.step_filler is not None:  # a written step's stages beyond its weights are traced when asked
        return before + stepped + after
    present = set(distinct)  # modules with fewer steps (recorded code) have no place at the later steps
    return before + [p for p in stepped if p in present] + after


def bar_window(places: Sequence[Position], index: int) -> list[int]:
    """The positions the stage bar lists (and the digits jump to) while at `index`.

    All of them for a single attention; for a decode, the current step's stages (the last
    step's while on the alignment, the first's before the steps) with the stages that come
    before and after every step.
    """
    if not places or all(p.step is None for p in places):
        return list(range(len(places)))
    index = max(0, min(index, len(places) - 1))
    step = places[index].step
    if step is None:
        stepped = [n for n, p in enumerate(places) if p.step is not None]
        step = places[stepped[0] if index < stepped[0] else stepped[-1]].step
    return [n for n, p in enumerate(places) if p.step == step or p.step is None]


def same_place(places: Sequence[Position], previous: Position | None) -> int | None:
    """The index of `previous` in a new trace's positions, or of its stage at the nearest step."""
    if previous is None or not places:
        return None
    if previous in places:
        return places.index(previous)
    candidates = [n for n, p in enumerate(places) if p.name == previous.name]
    if not candidates:
        return None
    if previous.step is None:
        return candidates[0]  # from a single attention into a decode: its first step
    return min(candidates, key=lambda n: abs((places[n].step or 0) - (previous.step or 0)))


def place_title(trace: Trace, place: Position) -> str:
    """A place as the stage picker lists it: `step 2 · weights`, `tile 0 · running_max`, `enc: scores`.

    Steps and tiles are counted from 0, as torch indexes them and as the captions and the CLI count them;
    the stage's own name follows its title where the two differ (Korean), so either can be typed."""
    title = stage_title(place.name)
    text = title if title == place.name else f"{title} ({place.name})"
    if place.module:
        text = f"{place.module}: {text}"
    if place.step is None:
        return text
    return f"{step_name(trace, place.step)} · {text}"


def step_name(trace: Trace, step: int) -> Msg:
    """`decoder step 2`, `tile 0` or `step 2`: what a step is in this trace (its steps say), counted from 0."""
    if trace.step_axis is not None:
        return trace.step_axis.name(step)
    return trace.meta.step_name(step)


def whose_cell(trace: Trace, place: Place) -> str:
    """`layer 2, head 5, step 1`: which layer, head and step a cell belongs to, so that the inspector's
    arithmetic names the head it explains; empty where the trace has none of these axes."""
    parts = []
    if place.layer is not None:
        parts.append(str(Msg("layer {layer}", layer=place.layer)))
    if place.head is not None:
        parts.append(str(Msg("head {head}", head=place.head)))
    if place.step is not None:
        parts.append(str(step_name(trace, place.step)))
    return ", ".join(parts)
