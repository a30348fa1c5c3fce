"""Named rows in the matrix parser, the identity projection, and which settings apply."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from attn_tui.ask.applies import applicable, not_applying
from attn_tui.ask.inputs import parse_matrix, parse_rows
from attn_tui.ask.settings import Settings, VariantAsk, XInput
from attn_tui.attention.engine import compute
from attn_tui.errors import InputError
from attn_tui.explain.cell import explain
from tests.conftest import matrices, sentence


def test_rows_may_be_named_and_names_become_labels() -> None:
    parsed = parse_rows("나는: 0.1 0.2\n학교에: 1, 2\n3 4\n<pad>: 0 0")
    assert parsed.rows == [[0.1, 0.2], [1.0, 2.0], [3.0, 4.0], [0.0, 0.0]]
    assert parsed.names == ("나는", "학교에", None, "<pad>")
    assert parsed.labels("x") == ("나는", "학교에", "x2", "<pad>")
    assert parse_rows("1 2\n3 4").labels("x") is None
    assert parse_matrix("a: 1 2; b: 3 4") == [[1.0, 2.0], [3.0, 4.0]]


@pytest.mark.parametrize("text,fragment", [
    ("a: \nb: 1 2", "row 1 is named 'a' but has no numbers"),
    ("a: 1 2\nb: 1", "row 2 has 1 number but row 1 has 2"),
    ("a: b: 1", "expected a number, found 'b:'"),
    ("x" * 50 + ": 1", "at most 40 characters"),
])
def test_bad_names_point_at_line_and_column(text: str, fragment: str) -> None:
    with pytest.raises(InputError, match="line") as found:
        parse_rows(text, "X")
    assert fragment in str(found.value)


@given(st.lists(st.tuples(st.text(alphabet="가나다라abc<>_", min_size=1, max_size=6),
                          st.lists(st.integers(-9, 9), min_size=3, max_size=3)), min_size=1, max_size=6))
def test_named_rows_round_trip(rows: list[tuple[str, list[int]]]) -> None:
    text = "\n".join(f"{name}: {' '.join(map(str, values))}" for name, values in rows)
    parsed = parse_rows(text)
    assert parsed.names == tuple(name for name, _ in rows)
    assert parsed.rows == [[float(v) for v in values] for _, values in rows]


def test_identity_projection_is_attention_on_exactly_the_typed_table() -> None:
    x = [[0.9, 0.1, 0.3, -0.2], [0.2, 0.8, -0.1, 0.4], [-0.3, 0.5, 0.7, 0.1]]
    settings = Settings(device="cpu", variant="dot", projection="identity")
    trace = compute(VariantAsk(XInput(x, ("나는", "학교에", "간다")), settings))
    t = torch.tensor(x)
    expected = torch.softmax(t @ t.T, dim=-1) @ t  # a naive reference: no weights anywhere
    assert torch.allclose(trace.tensor("output"), expected, atol=1e-6)
    assert trace.params == {} and trace.query_tokens == ("나는", "학교에", "간다")
    assert explain(trace, trace.stage("key").place, (1, 2)).matches
    learned = compute(VariantAsk(XInput(x), Settings(device="cpu", variant="dot")))
    assert "W_q" in learned.params and torch.allclose(learned.tensor("query"), t @ learned.params["W_q"].T)


@pytest.mark.parametrize("variant", ["scaled_dot", "general", "additive", "concat"])
def test_x_feeds_every_variant(variant: str) -> None:
    x = [[1.0, 0.0, 2.0], [0.5, 1.0, 0.0]]
    for projection in ("learned", "identity"):
        trace = compute(VariantAsk(XInput(x), Settings(device="cpu", variant=variant, projection=projection)))
        assert torch.allclose(trace.tensor("weights").sum(-1), torch.ones(2))


def test_settings_that_apply() -> None:
    assert "heads" not in applicable(sentence("a b"))
    assert {"heads", "head"} <= applicable(sentence("a b", variant="multihead"))
    assert "projection" not in applicable(sentence("a b", variant="multihead"))
    typed = matrices([[1.0]], [[1.0]], [[1.0]], variant="dot")
    assert not {"projection", "positional", "seed", "dim"} & applicable(typed)
    assert "seed" in applicable(matrices([[1.0]], [[1.0]], [[1.0]], variant="additive"))
    assert "mask_fill" in applicable(sentence("a b", mask="causal")) and "pad_keys" not in applicable(
        sentence("a b", mask="causal"))
    identity = VariantAsk(XInput([[1.0]]), Settings(device="cpu", variant="dot", projection="identity"))
    assert "seed" not in applicable(identity)  # nothing learned, nothing seeded
    assert [str(m) for m in not_applying(sentence("a b"), {"heads", "mask"})] == [
        "--heads does not apply to scaled_dot: it has one head (several: multihead, gqa, alibi, sink, mla, diff)"]
