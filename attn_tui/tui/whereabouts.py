"""Where the user is in the trace on show, as a plain object: no Textual, so unit tests step it without Pilot.

`Whereabouts` holds the place (stage, decoder step and module, as an index into the trace's
places), the layer and head, the query whose energy slice is shown, the panel on show and its
two switches, B's layer and head, and the heatmap's cursor and scroll. Its methods step and
clamp those against the sizes they are given (a layer may have its own number of heads), and
say whether the step applied; the explorer draws what they leave. The frozen snapshot the
reader thread reads (`widgets.frame.Where`) is made from it.

The cursor's truth is the heatmap's reactive `cursor` (it alone knows the grid it clamps to):
`cursor` and `scroll` here are the explorer's copy, written from `Heatmap.CursorMoved` and
brought up to date before each snapshot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, overload

from attn_tui.present.positions import Position, same_place

STAGES = "heatmap"  # the panel of the stages themselves

T = TypeVar("T")


@dataclass
class Whereabouts:
    """Where the user is: place, layer, head, energy query, panel, B's layer and head, cursor and scroll."""

    places: tuple[Position, ...] = ()  # a tuple: each key's frame ask takes it as it is
    stage_index: int = 0
    layer_index: int = 0
    head: int = 0
    energy_query: int = 0  # the query whose energy slice is shown
    panel: str = STAGES
    shared_scale: bool = True  # one colour scale for every head (heads panel), for A and B (compare)
    value_weighted: bool = False  # the rollout panel shows the value-weighted rollout (r again)
    b_layer: int = 0  # B's layer and head when B has them and A has not
    b_head: int = 0
    cursor: tuple[int, int] = (0, 0)  # (row, col) in the grid on show
    scroll: tuple[int, int] = (0, 0)  # (x, y) of the heatmap when its cursor last moved

    @property
    def place(self) -> Position | None:
        return self.places[self.stage_index] if self.places else None

    def settle_on(self, places: tuple[Position, ...], first_stage: str | None = None, keep: bool = True) -> None:
        """A new trace's places: stay at the place the user was at (`keep`) when it is still there, else go to
        the first place named `first_stage`, else to the first."""
        previous = self.place if keep else None
        self.places = places
        found = same_place(places, previous)
        if found is None:
            named = [n for n, place in enumerate(places) if place.name == first_stage]
            found = named[0] if named else 0
        self.stage_index = found

    def fit(self, layers: int, heads_at: Callable[[int], int]) -> None:
        """Keep the layer and head inside a trace of `layers` layers, `heads_at(layer)` heads each."""
        self.layer_index = max(0, min(self.layer_index, layers - 1))
        self.head = max(0, min(self.head, heads_at(self.layer_index) - 1))

    def go_to_place(self, index: int) -> bool:
        """Go to place `index`, clamped to the places; False when there are none."""
        if not self.places:
            return False
        self.stage_index = max(0, min(index, len(self.places) - 1))
        return True

    def step_head(self, step: int, heads: int) -> bool:
        """Next or previous of `heads` heads, wrapping; False when there is one."""
        if heads <= 1:
            return False
        self.head = (self.head + step) % heads
        return True

    def step_layer(self, step: int, layers: int, heads_at: Callable[[int], int]) -> bool:
        """Next or previous of `layers` layers, wrapping, the head kept inside the new layer's `heads_at(layer)`
        (a full layer after a linear one's head); False when there is one layer."""
        if layers <= 1:
            return False
        self.layer_index = (self.layer_index + step) % layers
        self.head = min(self.head, heads_at(self.layer_index) - 1)
        return True

    def step_b(self, d_layer: int, d_head: int, layers: int, heads: int) -> None:
        """B's layer and head, wrapping, where B has layers and heads and A has not."""
        self.b_layer = (self.b_layer + d_layer) % max(1, layers)
        self.b_head = (self.b_head + d_head) % max(1, heads)

    def step_query(self, step: int, queries: int) -> None:
        """The query whose energy slice is shown, clamped to `queries`."""
        self.energy_query = max(0, min(queries - 1, self.energy_query + step))

    def toggle_scale(self) -> None:
        self.shared_scale = not self.shared_scale


class OnWhereabouts(Generic[T]):
    """An attribute of its owner that is its `whereabouts`' attribute of the same name, read and written there."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, owner: None, kind: type) -> OnWhereabouts[T]: ...

    @overload
    def __get__(self, owner: Any, kind: type | None = None) -> T: ...

    def __get__(self, owner: Any, kind: type | None = None) -> OnWhereabouts[T] | T:
        if owner is None:
            return self
        value: T = getattr(owner.whereabouts, self.name)
        return value

    def __set__(self, owner: Any, value: T) -> None:
        setattr(owner.whereabouts, self.name, value)


__all__ = ["STAGES", "OnWhereabouts", "Whereabouts"]
