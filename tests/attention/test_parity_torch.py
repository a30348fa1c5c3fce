"""scaled_dot and multihead against torch's own SDPA and nn.MultiheadAttention."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from attn_tui.attention.engine import compute
from tests.conftest import matrices, sentence, x_matrix

MASKS = ["none", "causal", "padding", "causal+padding"]


def _random(rows: int, cols: int, seed: int) -> list[list[float]]:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)).tolist()


@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("shape", [(4, 4, 3, 2), (3, 6, 5, 4), (5, 2, 8, 1)])
def test_scaled_dot_matches_sdpa(mask: str, shape: tuple[int, int, int, int]) -> None:
    n_q, n_k, d, d_v = shape
    q, k, v = _random(n_q, d, 1), _random(n_k, d, 2), _random(n_k, d_v, 3)
    trace = compute(matrices(q, k, v, variant="scaled_dot", mask=mask, pad_keys=1, device="cpu"))
    assert (trace.mask is None) == (mask == "none")
    expected = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                              attn_mask=None if trace.mask is None else trace.mask.allowed)
    assert (trace.tensor("output") - expected).abs().max() <= 1e-6


def test_causal_mask_is_torch_is_causal() -> None:
    q, k, v = _random(3, 4, 4), _random(5, 4, 5), _random(5, 2, 6)
    trace = compute(matrices(q, k, v, mask="causal"))
    expected = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), is_causal=True)
    assert torch.allclose(trace.tensor("output"), expected, atol=1e-6, rtol=0)


def test_fully_masked_rows_match_sdpa_and_are_reported() -> None:
    q, k, v = _random(3, 4, 7), _random(3, 4, 8), _random(3, 2, 9)
    custom = [[1, 0, 1], [0, 0, 0], [1, 1, 1]]
    trace = compute(matrices(q, k, v, custom_mask=custom))
    expected = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                              attn_mask=torch.tensor(custom, dtype=torch.bool))
    assert torch.allclose(trace.tensor("output"), expected, atol=1e-6, rtol=0)
    assert torch.equal(trace.tensor("weights")[1], torch.zeros(3))
    assert any("row 1" in w and "zeros" in w for w in trace.warnings)
    assert not any(torch.isnan(s.tensor).any() for s in trace)


def test_padding_mask_everything_masked_under_fill_1e9_is_uniform() -> None:
    q, k, v = _random(2, 4, 10), _random(3, 4, 11), _random(3, 2, 12)
    trace = compute(matrices(q, k, v, mask="padding", pad_keys=3, mask_fill="-1e9"))
    assert torch.allclose(trace.tensor("weights"), torch.full((2, 3), 1 / 3))
    assert any("uniform" in w for w in trace.warnings)


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("mask", ["none", "causal", "padding"])
def test_multihead_matches_nn_multihead_attention(heads: int, mask: str) -> None:
    text = "나는 학교에 간다 오늘 <pad>"
    trace = compute(sentence(text, variant="multihead", heads=heads, dim=8, mask=mask, positional=True))
    p = trace.params
    mha = torch.nn.MultiheadAttention(8, heads, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(p["W_qkv"])
        mha.in_proj_bias.copy_(p["b_qkv"])
        mha.out_proj.weight.copy_(p["W_o"])
        mha.out_proj.bias.copy_(p["b_o"])
    x = trace.tensor("embedded_pos")[None]  # (1, N, d)
    attn_mask = None if trace.mask is None else ~trace.mask.allowed  # MHA: True = not allowed
    out, weights = mha(x, x, x, attn_mask=attn_mask, average_attn_weights=False)
    assert torch.allclose(trace.tensor("projected"), out[0], atol=1e-5, rtol=0)
    for h in range(heads):
        assert torch.allclose(trace.tensor("weights", head=h), weights[0, h], atol=1e-5, rtol=0)


def test_multihead_from_typed_x_matches_mha() -> None:
    x = _random(5, 6, 13)
    trace = compute(x_matrix(x, variant="multihead", heads=3))
    p = trace.params
    mha = torch.nn.MultiheadAttention(6, 3, batch_first=True)
    with torch.no_grad():
        for name, target in (("W_qkv", mha.in_proj_weight), ("b_qkv", mha.in_proj_bias),
                             ("W_o", mha.out_proj.weight), ("b_o", mha.out_proj.bias)):
            target.copy_(p[name])
    xt = torch.tensor(x)[None]
    out, _ = mha(xt, xt, xt)
    assert torch.allclose(trace.tensor("projected"), out[0], atol=1e-5, rtol=0)
