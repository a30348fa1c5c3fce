"""ByPlace: a trace's stages by place, kept per step so that a grown trace shares the earlier steps."""

from __future__ import annotations

from attn_tui.trace.by_place import ByPlace
from attn_tui.trace.ops import Place


def test_it_reads_as_a_dict_in_the_order_of_recording_with_late_stepless_places_after_the_steps() -> None:
    places = [Place("x", None, None), Place("w", 0, 0, 0), Place("o", 0, 0, 0), Place("w", 0, 0, 1),
              Place("o", 0, 0, 1), Place("alignment", None, None)]
    mapping: ByPlace[int] = ByPlace((place, n) for n, place in enumerate(places))
    assert list(mapping) == places and list(mapping.values()) == list(range(6)) and len(mapping) == 6
    assert dict(mapping.items()) == {place: n for n, place in enumerate(places)}
    assert mapping[Place("alignment", None, None)] == 5 and Place("w", 0, 1, 0) not in mapping
    mapping[Place("q", 0, 0, 0)] = 6  # a place of an earlier step filled late is read with its step
    assert list(mapping)[:4] == [Place("x", None, None), Place("w", 0, 0, 0), Place("o", 0, 0, 0),
                                 Place("q", 0, 0, 0)]
    assert list(mapping.of_step(0).values()) == [1, 2, 6]
    del mapping[Place("o", 0, 0, 1)]
    assert Place("o", 0, 0, 1) not in mapping and len(mapping) == 6
    assert mapping.pop(Place("x", None, None)) == 0 and mapping.get(Place("x", None, None)) is None


def test_a_grown_mapping_shares_the_earlier_steps_and_keeps_its_own_step_to_itself() -> None:
    first: ByPlace[str] = ByPlace([(Place("w", 0, 0, 0), "step 0")])
    grown = first.plus(1, {Place("w", 0, 0, 1): "step 1"})
    assert Place("w", 0, 0, 1) in grown and Place("w", 0, 0, 1) not in first and len(first) == 1
    grown[Place("q", 0, 0, 0)] = "filled through the grown one"  # an earlier step is one run, shared
    assert first[Place("q", 0, 0, 0)] == "filled through the grown one"
    grown[Place("alignment", None, None)] = "after the steps"
    assert Place("alignment", None, None) not in first and list(grown)[-1] == Place("alignment", None, None)
    copied = grown.copy()
    copied[Place("k", 0, 0, 0)] = "only in the copy"
    assert Place("k", 0, 0, 0) not in grown and set(copied) - set(grown) == {Place("k", 0, 0, 0)}
