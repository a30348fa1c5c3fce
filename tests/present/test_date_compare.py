"""Two date models side by side: the alignments drawn are the traces' own, filled as far as A's decode has got."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from attn_tui.ask.settings import ModelAsk
from attn_tui.present.compare import comparisons
from attn_tui.present.date_compare import side_by_side
from attn_tui.sources import run

pytestmark = pytest.mark.slow  # each test runs the trained date models

TEXT, TARGET = "Sunday, 22 Nov 2026", "2026-11-22"


def _traces(forcing: bool = False, target: str | None = TARGET, text: str = TEXT):
    gru = run(ModelAsk("seq2seq-dates", text, target=target, teacher_forcing=forcing)).trace
    transformer = run(ModelAsk("transformer-dates", text, target=target, teacher_forcing=forcing)).trace
    return gru, transformer


def _naive_same(a: torch.Tensor, b: torch.Tensor, rows: int) -> tuple[int, ...]:
    """Rows whose largest weight is at the same column, by a plain loop over the tensors."""
    same = []
    for t in range(rows):
        best_a = max(range(a.shape[1]), key=lambda j: float(a[t, j]))
        best_b = max(range(b.shape[1]), key=lambda j: float(b[t, j]))
        if best_a == best_b:
            same.append(t)
    return tuple(same)


@pytest.mark.parametrize("forcing", [False, True])
def test_each_step_of_the_gru_fills_one_row_of_both_alignments(forcing: bool) -> None:
    gru, transformer = _traces(forcing)
    assert gru.meta.teacher_forcing == transformer.meta.teacher_forcing == forcing
    theirs = transformer.tensor("alignment", 1, 2, None, "cross_attn")  # (T, S)
    ours = gru.tensor("alignment")  # (T, S)
    for step in range(gru.steps()):
        before = side_by_side(gru, transformer, "query", step, None, 1, 2)
        after = side_by_side(gru, transformer, "weights", step, None, 1, 2)
        assert (before.a.grid.filled_rows, after.a.grid.filled_rows) == (step, step + 1)
        assert before.b.grid.filled_rows == step and after.b.grid.filled_rows == step + 1
        assert np.allclose(after.a.grid.values, ours.numpy()) and np.allclose(after.b.grid.values, theirs.numpy())
        assert after.diff is not None and after.diff.filled_rows == step + 1
        assert np.allclose(after.diff.values, (theirs - ours).numpy(), atol=1e-6)
        assert after.steps == step + 1 and after.same == _naive_same(ours, theirs, step + 1)
    assert (after.a_title, after.a_heading) == ("seq2seq-dates · additive", "seq2seq-dates: Bahdanau attention")
    assert (after.b_title, after.b_heading) == ("transformer-dates · L1 H2",
                                                "transformer-dates: cross-attention, layer 1, head 2")
    assert after.a.place.name == "alignment" and after.b.place.key == transformer.stage(
        "alignment", 1, 2, None, "cross_attn").place.key


def test_the_transformer_as_a_fills_only_at_each_steps_cross_attention_and_the_mean_follows_its_heads() -> None:
    gru, transformer = _traces()
    encoder = side_by_side(transformer, gru, "weights", None, "enc_attn", 0, None)
    assert encoder.steps == 0 and encoder.a.grid.filled_rows == encoder.b.grid.filled_rows == 0
    assert "no decoder step yet" in encoder.note()
    own = side_by_side(transformer, gru, "weights", 3, "self_attn", 0, None)
    cross = side_by_side(transformer, gru, "weights", 3, "cross_attn", 0, None)
    assert (own.steps, cross.steps) == (3, 4)
    mean = transformer.tensor("alignment_mean", 0, None, None, "cross_attn")
    heads = torch.stack([transformer.tensor("alignment", 0, h, None, "cross_attn") for h in range(4)]).mean(0)
    assert torch.allclose(mean, heads) and np.allclose(cross.a.grid.values, mean.numpy())
    assert cross.a_title == "transformer-dates · L0 mean of heads" and cross.a.place.name == "alignment_mean"
    assert cross.a_heading == "transformer-dates: cross-attention, layer 0, mean of the heads"
    end = side_by_side(transformer, gru, "alignment", None, "cross_attn", 1, 3)
    assert end.steps == transformer.steps() == gru.steps()


def test_the_note_names_the_steps_where_the_strongest_inputs_differ() -> None:
    gru, transformer = _traces()
    pair = side_by_side(gru, transformer, "alignment", None, None, 0, 0)
    assert pair.steps == gru.steps()
    assert set(pair.same) | set(pair.differ) == set(range(pair.steps)) and not set(pair.same) & set(pair.differ)
    note = pair.note()
    if pair.differ:
        first = pair.differ[0]
        assert f"{first} {gru.query_tokens[first]!r}" in note  # steps counted from 0, as the stage bar counts
        assert f"{len(pair.same)} of {pair.steps}" in note
    else:
        assert "every step so far" in note


def test_outputs_of_different_lengths_have_no_difference_grid() -> None:
    """Rows that do not line up (here A is forced along a shorter target than B wrote): no B − A, and why."""
    _, transformer = _traces(target=None)
    short = run(ModelAsk("seq2seq-dates", TEXT, target="2026-1-2", teacher_forcing=True)).trace  # 9 steps
    pair = side_by_side(short, transformer, "alignment", None, None, 0, 0)
    assert pair.diff is None and "no B − A" in pair.message and pair.steps == short.steps()
    assert pair.b.grid.filled_rows == transformer.steps()  # A has reached its end: B shows all of its own


def test_the_choices_offer_every_other_date_model_and_the_transformers_mean() -> None:
    gru = ModelAsk("seq2seq-dates", TEXT)
    found = [(str(c.a_label), str(c.b_label), c.mean_heads) for c in comparisons(gru, 1, 0) if c.models]
    assert found == [("seq2seq-dates", "seq2seq-dates-general", False),
                     ("seq2seq-dates", "transformer-dates", False),
                     ("seq2seq-dates", "transformer-dates, mean of the heads", True)]
    transformer = ModelAsk("transformer-dates", TEXT, target=TARGET)
    chosen = [c for c in comparisons(transformer, 4, 0) if c.models]
    assert {str(c.b_label) for c in chosen} == {"seq2seq-dates", "seq2seq-dates-general"}
    assert all(c.b_ask(transformer) == ModelAsk(dict(c.change)["name"], TEXT, target=TARGET) for c in chosen)
    assert all(c.fits(transformer) and not c.fits(ModelAsk("minilm", TEXT)) for c in chosen)
    assert not chosen[0].fits(chosen[0].b_ask(transformer))  # A switched to B's model: nothing to compare


def test_both_alignments_share_one_colour_range_unless_asked_for_their_own() -> None:
    gru, transformer = _traces()
    own = side_by_side(gru, transformer, "weights", 5, None, 1, 2, shared=False)
    shared = side_by_side(gru, transformer, "weights", 5, None, 1, 2)
    ours, theirs = gru.tensor("alignment")[:6], transformer.tensor("alignment", 1, 2, None, "cross_attn")[:6]
    assert own.a.grid.finite_range() == pytest.approx((float(ours.min()), float(ours.max())))  # rows reached
    assert own.b.grid.finite_range() == pytest.approx((float(theirs.min()), float(theirs.max())))
    both = (min(float(ours.min()), float(theirs.min())), max(float(ours.max()), float(theirs.max())))
    assert shared.a.grid.finite_range() == shared.b.grid.finite_range() == pytest.approx(both)
    assert shared.diff is not None and shared.diff.finite_range() == own.diff.finite_range()  # B − A: its own
    assert np.array_equal(shared.a.grid.values, own.a.grid.values)  # the colours change, never the numbers
