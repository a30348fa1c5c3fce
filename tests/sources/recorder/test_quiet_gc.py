"""The heap frozen while a recording runs (no full collection walks the program's old objects) and handed back after."""

from __future__ import annotations

import gc

import torch

import attn_tui
from attn_tui.sources.recorder.hooks import quiet_gc
from tests.sources.recorder.modules import MultiHeadAttention


def test_a_recording_freezes_the_heap_and_hands_it_back_even_when_the_code_raises() -> None:
    assert gc.get_freeze_count() == 0
    module = MultiHeadAttention(16, 2).eval()
    old = [object()]  # made before the recording: frozen while it runs
    during: list[int] = []
    try:
        with torch.no_grad(), attn_tui.record() as rec:
            during.append(gc.get_freeze_count())
            module(torch.randn(1, 5, 16))
            raise KeyError("the user's own error")
    except KeyError:
        pass
    assert during[0] > 0 and gc.get_freeze_count() == 0
    assert any(o is old for o in gc.get_objects())  # back in the collector's sight
    assert rec.trace.stage("weights", head=1).tensor.shape == (5, 5)


def test_nested_recordings_hand_the_heap_back_once_the_last_ends() -> None:
    with attn_tui.record():
        with attn_tui.record():
            assert gc.get_freeze_count() > 0
        assert gc.get_freeze_count() > 0
    assert gc.get_freeze_count() == 0


def test_a_program_that_froze_its_heap_keeps_it_frozen() -> None:
    old = [object()]  # the program's own, frozen by it
    gc.freeze()
    try:
        with attn_tui.record():
            pass
        # Not handed back to the collector by the recording. (Not a count: frozen objects still die by reference
        # count, as the recorder's line cache does when a recording ends, after another test filled it.)
        assert gc.get_freeze_count() > 0 and not any(o is old for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_thawed_lets_get_referrers_see_objects_made_before_the_recording() -> None:
    target = [1]
    holder = {"held": target}
    quiet_gc.hold()
    try:
        assert holder not in gc.get_referrers(target)  # frozen: invisible to get_referrers
        with quiet_gc.thawed():
            assert holder in gc.get_referrers(target)
        assert gc.get_freeze_count() > 0
    finally:
        quiet_gc.release()
    assert gc.get_freeze_count() == 0


def test_a_collection_during_a_recording_frees_its_own_cycles() -> None:
    with attn_tui.record():
        cycle: list[object] = []
        cycle.append(cycle)
        del cycle
        assert gc.collect() >= 1  # what the recording's code made is still collected


def test_a_dropped_recording_is_freed_at_once_not_by_the_next_full_collection() -> None:
    """No cycle holds a recording: its recorder, its graph and the values it kept go with its last reference
    (a loop that records each step would otherwise hold every past recording until a full collection)."""
    import weakref

    module = MultiHeadAttention(16, 2).eval()
    gc.disable()
    try:
        with torch.no_grad(), attn_tui.record() as rec:
            module(torch.randn(1, 8, 16), torch.tril(torch.ones(8, 8)))
        assert rec.trace.stage("weights", head=0).tensor.shape == (8, 8)
        anchor = next(iter(rec.recorder.anchors.values()))[0]
        assert anchor.consumers  # the graph has forward links: a cycle, until the recorder unlinks it
        recorder, kept = weakref.ref(rec.recorder), weakref.ref(anchor.value)
        del anchor, rec
        assert recorder() is None and kept() is None
    finally:
        gc.enable()
