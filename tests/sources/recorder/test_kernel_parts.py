"""A kernel's mask told by its parts (maskparts.by_parts), and the kernel's output beside A·V (expand.beside_kernel)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.sources.recorder.expand import beside_kernel
from attn_tui.sources.recorder.found import Found
from attn_tui.sources.recorder.maskparts import by_parts
from attn_tui.sources.recorder.node import Scope


def test_causal_window_and_padding_rebuild_the_matrix_or_nothing_is_claimed() -> None:
    rows, cols = torch.arange(6)[:, None], torch.arange(6)[None, :]
    causal = cols <= rows
    spec = by_parts(causal)
    assert spec is not None and spec.causal and spec.window is None and spec.padding is None
    window = causal & (cols > rows - 2)
    spec = by_parts(window)
    assert spec is not None and spec.causal and spec.window == 2 and torch.equal(spec.allowed, window)
    padded = causal & (cols >= 2)  # left padding: keys 0 and 1
    spec = by_parts(padded)
    assert spec is not None and spec.padding is not None and spec.padding.tolist() == [True, True] + [False] * 4
    assert spec.window is None  # the padding explains it all: no window is made up
    assert [str(r) for r in spec.reasons(3, 1)] == ["<pad> key: key 1 is padding"]
    odd = causal.clone()
    odd[4, 1] = False  # one cell no rule explains: the matrix is shown as given
    assert by_parts(odd) is None
    assert by_parts(torch.ones(2, 3, dtype=torch.bool).tril(1)) is None  # a cached key prefix: L != S
    assert by_parts(torch.ones(3, 3, dtype=torch.bool)) is None


def test_the_kernels_output_is_set_beside_a_v_and_a_real_gap_is_warned() -> None:
    torch.manual_seed(0)
    weights = torch.softmax(torch.randn(2, 3, 4), -1)
    values = torch.randn(2, 4, 5)
    found = Found(Scope("x", 0), 0, 1, 2)
    line = beside_kernel(weights @ values, weights, values, found)
    assert "differs from it by at most" in str(line) and not found.warnings
    line = beside_kernel(weights @ values + 0.25, weights, values, found)
    assert str(line).endswith("at most 0.25")
    assert [str(w) for w in found.warnings] == ["the kernel's output and A·V recomputed from the weights shown differ "
                                                "by up to 0.25: the weights shown may not be the kernel's"]


def test_sdpa_with_an_additive_mask_and_a_scale_is_told_as_the_code_holds_it() -> None:
    torch.manual_seed(1)
    q, k, v = torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8)
    additive = torch.zeros(4, 4).masked_fill(~torch.ones(4, 4, dtype=torch.bool).tril(), -torch.inf)
    with attn_tui.record() as rec:
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=additive, scale=0.5)
    trace = rec.trace
    spec = trace.stage("masked", head=1).op.mask
    assert spec is not None and spec.causal and spec.code_rule == "additive"
    assert "future key" in " ".join(str(r) for r in spec.reasons(0, 3))
    expected = torch.softmax((q @ k.transpose(-2, -1) * 0.5 + additive).double(), -1)[0]
    for h in range(2):
        torch.testing.assert_close(trace.tensor("weights", head=h).double(), expected[h])
        assert torch.equal(trace.tensor("output", head=h), out[0, h])
