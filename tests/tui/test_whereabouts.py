"""Where the user is, stepped and clamped without Textual: the explorer's navigation keys in plain calls."""

from __future__ import annotations

from attn_tui.ask.settings import SentenceInput, VariantAsk
from attn_tui.present.positions import Position
from attn_tui.tui.state import AppState
from attn_tui.tui.whereabouts import STAGES, Whereabouts

PLACES = (Position("query"), Position("scores"), Position("weights"), Position("output"))
DECODE = tuple(Position(name, step) for step in range(3) for name in ("scores", "weights"))
HEADS = [4, 2, 4]  # a layer may have its own number of heads (a linear-attention layer among full ones)


def test_the_app_state_holds_where_the_user_is() -> None:
    state = AppState(VariantAsk(SentenceInput("the cat sat")))
    assert state.whereabouts == Whereabouts()
    assert (state.whereabouts.panel, state.whereabouts.cursor, state.whereabouts.shared_scale) == (STAGES, (0, 0),
                                                                                                   True)


def test_a_new_trace_keeps_the_place_or_opens_at_the_stage_asked_for() -> None:
    here = Whereabouts()
    here.settle_on(PLACES, "weights")
    assert here.place == Position("weights")  # nothing kept yet: the stage asked for
    here.stage_index = 1
    here.settle_on(PLACES[::-1], "weights")
    assert here.place == Position("scores")  # kept where it is in the new places
    here.settle_on(DECODE, "weights")
    assert here.place == Position("scores", 0)  # from a single attention into a decode: its first step
    here.settle_on(PLACES, "weights", keep=False)
    assert here.place == Position("weights")  # the place forgotten: the stage asked for
    here.settle_on(PLACES, "nowhere", keep=False)
    assert here.stage_index == 0


def test_a_place_is_clamped_to_the_places() -> None:
    here = Whereabouts()
    assert not here.go_to_place(3)  # no trace yet
    here.settle_on(PLACES)
    assert here.go_to_place(99) and here.stage_index == 3
    assert here.go_to_place(-5) and here.stage_index == 0


def test_heads_wrap_and_one_head_does_not_step() -> None:
    here = Whereabouts()
    assert not here.step_head(1, 1) and here.head == 0
    assert here.step_head(-1, 4) and here.head == 3
    assert here.step_head(1, 4) and here.head == 0


def test_layers_wrap_and_keep_the_head_inside_each_layers_own_heads() -> None:
    here = Whereabouts(head=3)
    assert not here.step_layer(1, 1, HEADS.__getitem__) and here.layer_index == 0
    assert here.step_layer(1, 3, HEADS.__getitem__) and (here.layer_index, here.head) == (1, 1)
    assert here.step_layer(1, 3, HEADS.__getitem__) and (here.layer_index, here.head) == (2, 1)
    assert here.step_layer(1, 3, HEADS.__getitem__) and here.layer_index == 0  # wraps


def test_a_smaller_trace_clamps_the_layer_and_head() -> None:
    here = Whereabouts(layer_index=5, head=7)
    here.fit(3, HEADS.__getitem__)
    assert (here.layer_index, here.head) == (2, 3)
    here.fit(1, lambda layer: 1)
    assert (here.layer_index, here.head) == (0, 0)


def test_bs_layer_and_head_wrap_on_their_own() -> None:
    here = Whereabouts(head=1)
    here.step_b(0, -1, 2, 4)
    assert (here.b_layer, here.b_head, here.head) == (0, 3, 1)  # A's head stays
    here.step_b(1, 0, 2, 4)
    here.step_b(1, 0, 2, 4)
    assert here.b_layer == 0


def test_the_energy_query_is_clamped_and_the_scale_toggles() -> None:
    here = Whereabouts()
    here.step_query(-1, 3)
    assert here.energy_query == 0
    here.step_query(5, 3)
    assert here.energy_query == 2
    here.toggle_scale()
    assert not here.shared_scale
