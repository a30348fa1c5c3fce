"""A mask that cannot mean anything for the shapes (causal over cross-attention) is named in one warning."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attn_tui.attention.engine import compute
from tests.conftest import matrices, sentence

NOTE_Q = [[0, 10, 0]]  # note 002: one query over four keys
NOTE_K = [[10, 0, 0], [0, 10, 0], [0, 0, 10], [0, 0, 10]]
NOTE_V = [[1, 0], [10, 0], [100, 5], [1000, 6]]


def _meaningless(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "means nothing" in w]


@pytest.mark.parametrize("mask", ["causal", "causal+padding", "sliding"])
def test_causal_over_one_query_and_four_keys_is_flagged_once(mask: str) -> None:
    trace = compute(matrices(NOTE_Q, NOTE_K, NOTE_V, mask=mask, pad_keys=1))
    found = _meaningless([str(w) for w in trace.warnings])
    assert found == [f"the {mask} mask means nothing for 1 × 4 scores: queries and keys are not one sequence "
                     "(cross-attention), yet query i is kept to keys 0..i (choose mask none or padding)"]
    assert "\n" not in found[0]
    # the numbers are still what torch computes with its top-left is_causal; the warning names them, not hides them
    q, k, v = (torch.tensor(m, dtype=torch.float32) for m in (NOTE_Q, NOTE_K, NOTE_V))
    if mask == "causal":
        expected = F.scaled_dot_product_attention(q[None], k[None], v[None], is_causal=True)[0]
        torch.testing.assert_close(trace.tensor("output"), expected)
        assert trace.tensor("weights").tolist() == [[1.0, 0.0, 0.0, 0.0]]


@pytest.mark.parametrize("request_", [
    matrices(NOTE_Q, NOTE_K, NOTE_V, mask="padding", pad_keys=1),  # padding is about keys: fine for any shapes
    matrices(NOTE_Q, NOTE_K, NOTE_V),
    matrices([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1], [2]], mask="causal"),  # L = S: may be one sequence
    sentence("나는 학교에 간다", mask="causal"),  # self-attention: always one sequence
], ids=["padding", "none", "square", "sentence"])
def test_masks_that_can_mean_something_are_not_flagged(request_) -> None:
    assert _meaningless([str(w) for w in compute(request_).warnings]) == []


def test_the_warning_speaks_korean() -> None:
    from attn_tui import i18n

    trace = compute(matrices(NOTE_Q, NOTE_K, NOTE_V, mask="causal"))
    i18n.set_language("ko")
    text = str(_warning(trace))
    assert "1 × 4" in text and "교차 어텐션" in text, text


def _warning(trace):
    return next(w for w in trace.warnings if "means nothing" in str(w) or "의미가 없습니다" in str(w))
