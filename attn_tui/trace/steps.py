"""What a step of a trace is: a decoder step, a generated token, a key tile or a recorded call, named once.

A trace whose places carry `step` says here what its steps are, with a label per step
in the language on show and the key axis visible at that step: each step names the key
positions it adds, so step t sees keys 0…n_t (a decoder's self-attention what it has
written so far, flash the keys of its tiles so far) and a view reads "tile 2 (keys 8–11)"
from the trace instead of guessing from the kind of run.
`trace.growing` holds a trace that gains steps while readers look at the earlier ones, and
`Publisher` is how a source making its trace step by step hands out each step's snapshot.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

from attn_tui.i18n import N_, Msg
from attn_tui.trace.axes import Axis

StepKind = Literal["decoder", "token", "tile", "call", "state"]

# What one step of each kind is called, counted from 0 as torch indexes.
_NAMES: dict[str, str] = {"decoder": N_("decoder step {t}"), "token": N_("token {t}"), "tile": N_("tile {t}"),
                          "call": N_("step {step}"), "state": N_("token {t}")}


@dataclass(frozen=True)
class Step:
    """One step: its index, what kind of step it is, its label and the key positions it adds."""

    index: int
    kind: StepKind
    label: Msg  # "decoder step 3: '2'", "tile 2 (keys 8–11)", "call 1, batch item 0": read in the language on show
    new_keys: tuple[str, ...] = ()  # the labels of the key positions this step adds (held once, not per step)

    @property
    def name(self) -> Msg:
        """The step's short name: `decoder step 3`, `tile 2`."""
        return Msg(_NAMES[self.kind], t=self.index, step=self.index)


def decoder_step(t: int, wrote: str, new_keys: tuple[str, ...] = ()) -> Step:
    """Step t of a decoder that wrote `wrote` there; `new_keys`: what its attention can read from this step on
    (the whole input at step 0 of a GRU; the character fed at step t, for a transformer's self-attention)."""
    return Step(t, "decoder", Msg("decoder step {t}: {token}", t=t, token=repr(wrote)), new_keys)


def generated_token(t: int, token: str, new_keys: tuple[str, ...] = ()) -> Step:
    """Token t a model wrote; `new_keys`: the positions its key/value cache gained for it."""
    return Step(t, "token", Msg("token {t}: {token}", t=t, token=repr(token)), new_keys)


def key_tile(t: int, first: int, tile_keys: tuple[str, ...]) -> Step:
    """Tile t: the keys first…first+len(tile_keys)−1, read by this tile and by none before it."""
    return Step(t, "tile", Msg("tile {t} (keys {first}–{last})", t=t, first=first, last=first + len(tile_keys) - 1),
                tile_keys)


def recorded_call(t: int, call: int, item: int, new_keys: tuple[str, ...] = ()) -> Step:
    """Step t of recorded code: batch item `item` of its call `call`."""
    return Step(t, "call", Msg("call {call}, batch item {item}", call=call, item=item), new_keys)


@dataclass(frozen=True)
class Steps:
    """Every step of a trace so far, in order; all of one kind."""

    kind: StepKind
    items: tuple[Step, ...] = ()

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Step]:
        return iter(self.items)

    def __getitem__(self, t: int) -> Step:
        return self.items[t]

    def plus(self, step: Step) -> Steps:
        """These steps and the next one (its index must follow, its kind be theirs)."""
        if step.kind != self.kind or step.index != len(self.items):
            raise ValueError(f"step {step.index} ({step.kind}) cannot follow {len(self.items)} {self.kind} steps")
        return Steps(self.kind, (*self.items, step))

    def name(self, t: int) -> Msg:
        """Step t's short name; a step beyond these is called by its kind still."""
        return self.items[t].name if 0 <= t < len(self.items) else Msg(_NAMES[self.kind], t=t, step=t)

    def label(self, t: int) -> Msg:
        return self.items[t].label if 0 <= t < len(self.items) else self.name(t)

    def seen(self, t: int) -> int:
        """How many key positions step t sees (n_t: keys 0…n_t − 1)."""
        return sum(len(step.new_keys) for step in self.items[:t + 1])

    def keys(self, t: int) -> Axis:
        """The key axis visible at step t."""
        return Axis("key", tuple(label for step in self.items[:t + 1] for label in step.new_keys))


def made_at_once(steps: Sequence[Step]) -> Steps:
    """Steps made whole at once (a flash run, a recording)."""
    out = Steps(steps[0].kind if steps else "call")
    for step in steps:
        out = out.plus(step)
    return out
