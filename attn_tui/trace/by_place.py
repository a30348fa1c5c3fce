"""What a trace keeps by place (its stages, their statistics), in runs of one step each.

A model writing token by token publishes a new trace per step (`Trace.grown`): with one dict per trace,
each step copied every earlier step's stages, so writing t steps cost O(t²) stages. Here the entries live
in runs, each holding the places of one step in the order they were recorded; a grown trace takes the
earlier runs as they are and adds the new step's own, so growing costs the number of runs. A lookup goes
to the run of the place's step: still a dict access, not a scan.

Iteration follows the runs in the order they were begun, each in its own order of recording. That keeps
what `present.positions` reads from it: the relative order of one step's places, and where the first
stepped place sits among the places that have no step (a place without a step recorded after stepped ones
opens a run of its own, so it is read after them, as it was recorded).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, MutableMapping, ValuesView
from typing import TypeVar

from attn_tui.trace.ops import Place

V = TypeVar("V")


class ByPlace(MutableMapping[Place, V]):
    """A mapping of places to V whose entries are kept per step, shared with the traces grown from it."""

    __slots__ = ("_of_step", "_runs")

    def __init__(self, entries: Iterable[tuple[Place, V]] = ()) -> None:
        self._runs: list[tuple[int | None, dict[Place, V]]] = []  # (step, its places), in the order begun
        self._of_step: dict[int | None, list[dict[Place, V]]] = {}  # step → its runs (a step-less place: several)
        for place, value in entries:
            self[place] = value

    def _run_of(self, place: Place) -> dict[Place, V] | None:
        for run in self._of_step.get(place.step, ()):
            if place in run:
                return run
        return None

    def __getitem__(self, place: Place) -> V:
        run = self._run_of(place)
        if run is None:
            raise KeyError(place)
        return run[place]

    def __contains__(self, place: object) -> bool:
        return isinstance(place, Place) and self._run_of(place) is not None

    def __setitem__(self, place: Place, value: V) -> None:
        run = self._run_of(place)
        if run is None:
            runs = self._of_step.get(place.step)
            last_step = self._runs[-1][0] if self._runs else None
            if runs is None or (place.step is None and last_step is not None):
                run = {}
                self._runs.append((place.step, run))
                self._of_step[place.step] = [*(runs or ()), run]  # a new list: a grown map may share the old
            else:
                run = runs[-1]
        run[place] = value

    def __delitem__(self, place: Place) -> None:
        run = self._run_of(place)
        if run is None:
            raise KeyError(place)
        del run[place]

    def __iter__(self) -> Iterator[Place]:
        for _, run in tuple(self._runs):
            yield from tuple(run)  # a snapshot of the run: another thread may fill it meanwhile

    def items(self) -> ItemsView[Place, V]:
        return _Items(self)

    def values(self) -> ValuesView[V]:
        return _Values(self)

    def __len__(self) -> int:
        return sum(len(run) for _, run in self._runs)

    def of_step(self, step: int | None) -> dict[Place, V]:
        """The entries of one step, in the order they were recorded (a new dict)."""
        return {place: value for run in self._of_step.get(step, ()) for place, value in run.items()}

    def plus(self, step: int, entries: dict[Place, V]) -> ByPlace[V]:
        """A new mapping: this one's runs, shared, and `entries` (places of `step`, none of them here) as a run of
        their own, which the new mapping's later places of that step join."""
        grown: ByPlace[V] = ByPlace()
        grown._runs = [*self._runs, (step, entries)]
        grown._of_step = {**self._of_step, step: [*self._of_step.get(step, ()), entries]}
        return grown

    def copy(self) -> ByPlace[V]:
        """A mapping whose runs are its own: what is added to either later does not reach the other."""
        return ByPlace(self.items())

    def __repr__(self) -> str:
        return f"ByPlace({len(self)} places in {len(self._runs)} runs)"


class _Items(ItemsView[Place, V]):
    """The entries run by run, without a lookup per place."""

    _mapping: ByPlace[V]

    def __iter__(self) -> Iterator[tuple[Place, V]]:
        for _, run in tuple(self._mapping._runs):
            yield from tuple(run.items())


class _Values(ValuesView[V]):
    _mapping: ByPlace[V]

    def __iter__(self) -> Iterator[V]:
        for _, run in tuple(self._mapping._runs):
            yield from tuple(run.values())
