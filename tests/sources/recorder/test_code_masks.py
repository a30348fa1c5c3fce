"""A recorded program's own mask is kept as its code holds it, with the rule its code reads it by.

Each way of masking the notes use (masked_fill where True, where(mask, scores, fill), an
added mask of 0 and -1e9, `scores * mask + (1 - mask) * -1e9`, SDPA's bool attn_mask) is
recorded, and the inspector's line for a blocked and a kept cell is checked against the
mask the test wrote; the may-attend view must agree with the weights torch computed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.explain.cell import explain

KEEP = torch.tensor([[1, 1, 0], [1, 0, 0]])  # (L=2, S=3) 1 = may attend, as the test writes it
BLOCKED = KEEP == 0  # (L, S) a bool mask made before recording: the code holds True = blocked itself


def _fill_true(s: torch.Tensor) -> torch.Tensor:
    return s.masked_fill(BLOCKED, float("-inf"))


def _fill_compared(s: torch.Tensor) -> torch.Tensor:  # the notes' `masked_fill(mask == 0, -inf)`
    return s.masked_fill(KEEP == 0, float("-inf"))


def _where_compared(s: torch.Tensor) -> torch.Tensor:
    return torch.where(KEEP != 0, s, torch.tensor(-1e9))


def _where_keep(s: torch.Tensor) -> torch.Tensor:
    return torch.where(KEEP.bool(), s, torch.tensor(-1e9))


def _additive(s: torch.Tensor) -> torch.Tensor:
    return s + (1 - KEEP.float()) * -1e9


def _gate(s: torch.Tensor) -> torch.Tensor:
    return s * KEEP.float() + (1 - KEEP.float()) * -1e9


STYLES: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], str, str, str]] = {
    # rule: (the masking, its legend, what the code holds at a blocked cell, … at a kept cell)
    "masked_fill": (_fill_true, "masked_fill where True (True = blocked)",
                    "holds True here → filled with -inf (blocked)", "holds False here → kept (may attend)"),
    "masked_fill_compared": (_fill_compared, "masked_fill where True (True = blocked)",
                             "holds 0 here, so `mask == 0` is True → filled with -inf (blocked)",
                             "holds 1 here, so `mask == 0` is False → kept (may attend)"),
    "where_keep_compared": (_where_compared, "where(mask, scores, fill) (True = may attend)",
                            "holds 0 here, so `mask != 0` is False → filled with -1e9 (blocked)",
                            "holds 1 here, so `mask != 0` is True → kept (may attend)"),
    "where_keep": (_where_keep, "where(mask, scores, fill) (True = may attend)",
                   "holds False here → filled with -1e9 (blocked)", "holds True here → kept (may attend)"),
    "additive": (_additive, "added to the scores (0 = may attend, large negative = blocked)",
                 "holds -1e+09 here → added to the score (blocked)", "holds 0 here → added to the score (may attend)"),
    "gate": (_gate, "scores · mask (1 = may attend)", "holds 0 here → filled with -1e9 (blocked)",
             "holds 1 here → kept (may attend)"),
}


@pytest.mark.parametrize("rule", sorted(STYLES))
def test_each_way_of_masking_is_said_as_the_code_holds_it(rule: str) -> None:
    masking, legend, blocked, kept = STYLES[rule]
    torch.manual_seed(1)
    q, k = torch.randn(2, 4), torch.randn(3, 4)
    with attn_tui.record() as rec:
        weights = torch.softmax(masking(q @ k.T), dim=-1)
        weights @ k
    trace = rec.trace
    masked = next(s for s in trace.stages.values() if s.place.name.startswith("masked"))
    spec = trace.masking(masked).mask  # type: ignore[union-attr]
    assert spec is not None and spec.code_rule == rule.removesuffix("_compared") and legend in str(spec.convention())
    assert spec.legend_note().startswith("code: ")
    assert torch.equal(spec.allowed, KEEP.bool())  # the may-attend view the heatmap draws
    assert torch.equal(trace.tensor("weights") == 0, ~KEEP.bool())
    assert any(blocked in line for line in explain(trace, masked.place, (1, 1)).lines)
    assert any(kept in line for line in explain(trace, masked.place, (0, 0)).lines)


def test_multihead_attentions_key_padding_mask_is_kept_as_true_blocked() -> None:
    torch.manual_seed(3)
    module = torch.nn.MultiheadAttention(4, 2, batch_first=True).eval()
    x = torch.randn(1, 3, 4)
    pad = torch.tensor([[False, False, True]])  # (batch, keys): True = padding, as the module reads it
    with attn_tui.record() as rec, torch.no_grad():
        module(x, x, x, key_padding_mask=pad)
    trace = rec.trace
    masked = next(s for s in trace.stages.values() if s.place.name == "masked")
    spec = trace.masking(masked).mask  # type: ignore[union-attr]
    assert spec is not None and "key_padding_mask (True = blocked)" in str(spec.convention())
    assert torch.equal(spec.allowed, ~pad.expand(3, 3))
    assert any("holds True here → filled with -inf (blocked)" in line
               for line in explain(trace, masked.place, (0, 2)).lines)
    assert any("holds False here → kept (may attend)" in line for line in explain(trace, masked.place, (1, 0)).lines)


def test_sdpas_bool_mask_is_kept_as_true_may_attend() -> None:
    torch.manual_seed(2)
    q, k, v = torch.randn(1, 2, 4), torch.randn(1, 3, 4), torch.randn(1, 3, 4)
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q, k, v, attn_mask=KEEP.bool())
    trace = rec.trace
    masked = next(s for s in trace.stages.values() if s.place.name == "masked")
    spec = trace.masking(masked).mask  # type: ignore[union-attr]
    assert spec is not None and "SDPA's attn_mask (True = may attend)" in str(spec.convention())
    assert spec.legend_note() == "code: False → -∞"
    assert any("holds False here → filled with -inf (blocked)" in line
               for line in explain(trace, masked.place, (1, 2)).lines)


def test_the_self_attention_samples_mask_eq_0_is_said_with_the_values_its_mask_holds() -> None:
    # the sample writes `scores.masked_fill(mask == 0, -inf)` over a causal mask of 1s and 0s
    import runpy

    from attn_tui.ask.samples import samples_dir

    with attn_tui.record() as rec:
        runpy.run_path(str(samples_dir() / "scripts" / "self_attention.py"))
    trace = rec.trace
    masked = next(s for s in trace.stages.values() if s.place.name.startswith("masked"))
    spec = trace.masking(masked).mask  # type: ignore[union-attr]
    assert spec is not None and spec.code_test == "== 0" and spec.legend_note() == "code: mask == 0 True → -∞"
    assert str(spec.as_given(1, 0)) == "your code's mask holds 1 here, so `mask == 0` is False → kept (may attend)"
    assert str(spec.as_given(0, 1)) == ("your code's mask holds 0 here, so `mask == 0` is True → filled with -inf "
                                        "(blocked)")
