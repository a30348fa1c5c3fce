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


def test_a_bfloat16_kernel_differs_from_a_v_by_rounding_alone_and_another_mask_still_warns() -> None:
    """A·V is recomputed in float32 and the tolerance follows bfloat16's eps (expand.tolerance): the kernel's own
    output for the weights shown is no warning; its output for another mask (here none) is one."""
    torch.manual_seed(2)
    q, k, v = (torch.randn(2, 64, 32, dtype=torch.bfloat16) * s for s in (1.5, 1.5, 2.0))
    causal = torch.ones(64, 64, dtype=torch.bool).tril()
    scores = (q @ k.transpose(-2, -1) * 32 ** -0.5).masked_fill(~causal, -torch.inf)
    weights = torch.softmax(scores.float(), -1).to(torch.bfloat16)  # (2, L, S) as the recorder shows them
    right = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    found = Found(Scope("x", 0), 0, 1, 2)
    line = beside_kernel(right, weights, v, found)
    gap = float(str(line).rsplit(" ", 1)[-1])
    assert 0 < gap < 16 * 2 ** -7 * float(v.abs().max()) and not found.warnings
    other = F.scaled_dot_product_attention(q, k, v)  # the kernel given no mask: its output is not these weights'
    beside_kernel(other, weights, v, found)
    assert len(found.warnings) == 1 and "may not be the kernel's" in str(found.warnings[0])


def test_a_bfloat16_call_is_recorded_with_no_warning_about_its_kernel() -> None:
    torch.manual_seed(3)
    for dtype in (torch.bfloat16, torch.float16):
        q, k, v = (torch.randn(1, 4, 200, 64, dtype=dtype) for _ in range(3))
        with attn_tui.record() as rec:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        trace = rec.trace
        assert not trace.warnings, (dtype, trace.warnings)
        assert torch.equal(trace.tensor("output", head=3), out[0, 3])
        exact = torch.softmax((q[0].double() @ k[0].double().transpose(-2, -1) / 8).masked_fill(
            ~torch.ones(200, 200, dtype=torch.bool).tril(), -torch.inf), -1)  # (heads, L, S)
        shown = torch.stack([trace.tensor("weights", head=h) for h in range(4)]).double()
        torch.testing.assert_close(shown, exact, atol=4 * torch.finfo(dtype).eps, rtol=0)


def test_one_tokens_query_heads_folded_into_the_query_axis_are_shown_as_heads() -> None:
    """transformers' `pack_gqa`: a decode step's query (B, H, 1, D) reshaped to (B, H_kv, H/H_kv, D) against
    H_kv key heads, with a padding mask: shown as H heads of one query, head h reading key head h // 2."""
    torch.manual_seed(4)
    batch, heads, kv_heads, keys, dim = 2, 4, 2, 5, 8
    q = torch.randn(batch, heads, 1, dim) * 1.0  # `* 1.0`: a recorded op, as a model's rotary embedding is
    k, v = torch.randn(batch, kv_heads, keys, dim), torch.randn(batch, kv_heads, keys, dim)
    allowed = torch.ones(batch, 1, 1, keys, dtype=torch.bool)
    allowed[1, ..., :2] = False  # item 1: two padding keys
    with attn_tui.record() as rec:
        packed = q.reshape(batch, kv_heads, heads // kv_heads, dim)
        out = F.scaled_dot_product_attention(packed, k, v, attn_mask=allowed)
    trace = rec.trace
    assert not trace.warnings, trace.warnings
    wide_k = k.double().repeat_interleave(2, dim=1)  # (B, H, S, D)
    expected = torch.softmax((q.double() @ wide_k.transpose(-2, -1) / dim ** 0.5).masked_fill(~allowed, -torch.inf),
                             -1)  # (B, H, 1, S)
    for step in range(batch):
        for h in range(heads):
            torch.testing.assert_close(trace.tensor("weights", head=h, step=step).double(), expected[step, h])
            torch.testing.assert_close(trace.tensor("output", head=h, step=step),
                                       out.reshape(batch, heads, 1, dim)[step, h])
    spec = trace.stage("masked", head=3, step=1).op.mask
    assert spec is not None and spec.padding is not None and spec.padding.tolist() == [True, True, False, False, False]
    bias = torch.randn(batch, heads, 1, keys)  # a mask per head (as a position bias is), packed with the query
    with attn_tui.record() as rec:
        F.scaled_dot_product_attention(q.reshape(batch, kv_heads, 2, dim), k, v,
                                       attn_mask=bias.reshape(batch, kv_heads, 2, keys))
    expected = torch.softmax(q.double() @ wide_k.transpose(-2, -1) / dim ** 0.5 + bias.double(), -1)
    assert not rec.trace.warnings
    for h in range(heads):
        torch.testing.assert_close(rec.trace.tensor("weights", head=h, step=1).double(), expected[1, h])
    with attn_tui.record() as rec:  # is_causal masks the packed rows by position: nothing is unfolded
        F.scaled_dot_product_attention(q.reshape(batch, kv_heads, 2, dim), k, v, is_causal=True, enable_gqa=False)
    assert rec.trace.tensor("weights", head=1, step=0).shape == (2, keys)
