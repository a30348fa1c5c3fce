"""rope, gqa, alibi, sink, flash and the sliding masks against torch, transformers and plain loops."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from attn_tui.attention.engine import compute
from attn_tui.attention.variants.alibi.compute import slopes
from tests.conftest import matrices, sentence, x_matrix

MASKS = ["none", "causal", "padding", "causal+padding", "sliding", "sliding+padding"]
TEXT = "나는 어제 친구와 함께 학교에 갔다 <pad>"


def _random(rows: int, cols: int, seed: int) -> list[list[float]]:
    return torch.randn(rows, cols, generator=torch.Generator().manual_seed(seed)).tolist()


def _allowed(trace) -> torch.Tensor | None:
    return None if trace.mask is None else trace.mask.allowed


def sliding_by_loops(n_q: int, n_k: int, window: int) -> torch.Tensor:
    """Query i sees keys i − W < j ≤ i, written out cell by cell."""
    return torch.tensor([[i - window < j <= i for j in range(n_k)] for i in range(n_q)])


# ----- the sliding mask ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("window", [1, 2, 3, 9])
@pytest.mark.parametrize("shape", [(6, 6), (4, 7), (7, 4)])
def test_sliding_mask_is_the_window_and_matches_sdpa(window: int, shape: tuple[int, int]) -> None:
    n_q, n_k = shape
    q, k, v = _random(n_q, 4, 1), _random(n_k, 4, 2), _random(n_k, 3, 3)
    trace = compute(matrices(q, k, v, variant="scaled_dot", mask="sliding", window=window))
    expected_mask = sliding_by_loops(n_q, n_k, window)
    assert torch.equal(trace.mask.allowed, expected_mask)
    expected = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                              attn_mask=expected_mask)
    rows = expected_mask.any(-1)  # SDPA's fully masked rows are NaN or 0 depending on the backend: compare the rest
    assert (trace.tensor("output")[rows] - expected[rows]).abs().max() <= 1e-6


def test_sliding_plus_padding_hides_both_and_says_why() -> None:
    q, k, v = _random(5, 4, 4), _random(5, 4, 5), _random(5, 2, 6)
    trace = compute(matrices(q, k, v, mask="sliding+padding", window=2, pad_keys=1))
    expected_mask = sliding_by_loops(5, 5, 2) & torch.tensor([True] * 4 + [False])
    assert torch.equal(trace.mask.allowed, expected_mask)
    assert trace.mask.describe() == "sliding window 2 + padding"
    reasons = trace.mask.reasons(4, 1)
    assert any("outside the window of 2" in r for r in reasons)
    assert any("key 4 is padding" in r for r in trace.mask.reasons(4, 4))
    expected = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v),
                                              attn_mask=expected_mask)
    assert torch.allclose(trace.tensor("output"), expected, atol=1e-6, rtol=0)
    assert torch.allclose(trace.tensor("output")[4], torch.tensor(v[3]))  # row 4 sees keys 3 and 4; 4 is padding


@pytest.mark.parametrize("variant", ["dot", "scaled_dot", "general", "additive", "concat", "multihead", "rope",
                                     "gqa", "alibi", "sink", "flash"])
def test_every_variant_takes_the_sliding_mask(variant: str) -> None:
    trace = compute(sentence(TEXT, variant=variant, mask="sliding+padding", window=2, dim=8, heads=2))
    expected = sliding_by_loops(7, 7, 2) & torch.tensor([True] * 6 + [False])
    assert torch.equal(trace.mask.allowed, expected)
    for stage in trace:
        if stage.name == "weights":
            assert torch.equal(stage.tensor > 0, expected), stage.key


# ----- rope ---------------------------------------------------------------------------------------------------
def _transformers_rope(q: torch.Tensor, k: torch.Tensor, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """q (L, d) and k (S, d) rotated by transformers' own Llama rotary embedding and apply_rotary_pos_emb."""
    transformers = pytest.importorskip("transformers")
    from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding, apply_rotary_pos_emb

    d = q.shape[-1]
    config = transformers.LlamaConfig(hidden_size=d, num_attention_heads=1, head_dim=d,
                                      rope_parameters={"rope_theta": base, "rope_type": "default"})
    rotary = LlamaRotaryEmbedding(config)
    n = max(q.shape[0], k.shape[0])
    cos, sin = rotary(q[None], torch.arange(n)[None])  # (1, n, d) each
    q_rot, _ = apply_rotary_pos_emb(q[None, None], q[None, None], cos[:, :q.shape[0]], sin[:, :q.shape[0]])
    _, k_rot = apply_rotary_pos_emb(k[None, None], k[None, None], cos[:, :k.shape[0]], sin[:, :k.shape[0]])
    return q_rot[0, 0], k_rot[0, 0]


@pytest.mark.parametrize("base", [10000.0, 100.0, 500000.0])
@pytest.mark.parametrize("mask", MASKS)
def test_rope_matches_transformers_rotation_and_sdpa(base: float, mask: str) -> None:
    q, k, v = _random(5, 6, 7), _random(8, 6, 8), _random(8, 3, 9)
    trace = compute(matrices(q, k, v, variant="rope", rope_base=base, mask=mask, pad_keys=2, window=3))
    q_rot, k_rot = _transformers_rope(torch.tensor(q), torch.tensor(k), base)
    assert (trace.tensor("query_rot") - q_rot).abs().max() <= 1e-5
    assert (trace.tensor("key_rot") - k_rot).abs().max() <= 1e-5
    allowed = _allowed(trace)
    expected = F.scaled_dot_product_attention(q_rot, k_rot, torch.tensor(v), attn_mask=allowed)
    rows = allowed.any(-1) if allowed is not None else torch.ones(5, dtype=torch.bool)
    assert (trace.tensor("output")[rows] - expected[rows]).abs().max() <= 1e-5


def test_rope_scores_depend_on_the_distance_only() -> None:
    """The same vector at every position: q_i·k_j is then a function of i − j alone."""
    row = _random(1, 8, 10)[0]
    trace = compute(matrices([row] * 6, [row] * 6, [[1.0]] * 6, variant="rope", dtype="float64"))
    scores = trace.tensor("scores")
    for offset in range(-5, 6):
        diagonal = torch.diagonal(scores, offset)
        assert torch.allclose(diagonal, diagonal[0].expand_as(diagonal), atol=1e-10)


def test_rope_refuses_an_odd_width() -> None:
    from attn_tui.errors import ConfigError

    with pytest.raises(ConfigError, match="must be even, not 3"):
        compute(matrices(_random(2, 3, 1), _random(2, 3, 2), _random(2, 3, 3), variant="rope"))


# ----- gqa ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("heads,kv_heads", [(4, 1), (4, 2), (6, 3), (4, 4), (3, 1)])
@pytest.mark.parametrize("mask", ["none", "causal", "sliding+padding"])
def test_gqa_matches_sdpa_enable_gqa(heads: int, kv_heads: int, mask: str) -> None:
    trace = compute(sentence(TEXT, variant="gqa", heads=heads, kv_heads=kv_heads, dim=12, mask=mask, window=3,
                             positional=True))
    p = trace.params
    x = trace.tensor("embedded_pos")  # (N, d)
    n, d_h = x.shape[0], 12 // heads
    q = (x @ p["W_q"].T).view(n, heads, d_h).transpose(0, 1)[None]  # (1, H, N, d_h)
    k = (x @ p["W_k"].T).view(n, kv_heads, d_h).transpose(0, 1)[None]  # (1, K, N, d_h)
    v = (x @ p["W_v"].T).view(n, kv_heads, d_h).transpose(0, 1)[None]
    allowed = _allowed(trace)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, enable_gqa=True)  # (1, H, N, d_h)
    rows = allowed.any(-1) if allowed is not None else torch.ones(n, dtype=torch.bool)
    for h in range(heads):
        assert (trace.tensor("output", head=h)[rows] - out[0, h][rows]).abs().max() <= 1e-6, h
    projected = out[0].transpose(0, 1).reshape(n, heads * d_h) @ p["W_o"].T
    assert (trace.tensor("projected")[rows] - projected[rows]).abs().max() <= 1e-5
    assert trace.meta.kv_map == tuple(h // (heads // kv_heads) for h in range(heads))


def test_gqa_with_as_many_kv_heads_as_heads_is_nn_multihead_attention() -> None:
    x = _random(5, 8, 11)
    trace = compute(x_matrix(x, variant="gqa", heads=4, kv_heads=4, mask="causal"))
    p = trace.params
    mha = torch.nn.MultiheadAttention(8, 4, bias=False, batch_first=True)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([p["W_q"], p["W_k"], p["W_v"]]))
        mha.out_proj.weight.copy_(p["W_o"])
    xt = torch.tensor(x)[None]
    out, weights = mha(xt, xt, xt, attn_mask=~trace.mask.allowed, average_attn_weights=False)
    assert torch.allclose(trace.tensor("projected"), out[0], atol=1e-5, rtol=0)
    for h in range(4):
        assert torch.allclose(trace.tensor("weights", head=h), weights[0, h], atol=1e-6, rtol=0)


def test_gqa_heads_of_a_group_read_the_same_key_and_value() -> None:
    trace = compute(sentence("a b c d", variant="gqa", heads=6, kv_heads=2, dim=12))
    for h in range(6):
        for other in range(6):
            same = torch.equal(trace.tensor("key", head=h), trace.tensor("key", head=other))
            assert same == (h // 3 == other // 3), (h, other)
    assert trace.params["W_k"].shape == (4, 12) and trace.params["W_q"].shape == (12, 12)


# ----- alibi --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("heads", [1, 2, 3, 4, 6, 8, 12])
def test_alibi_slopes_are_blooms(heads: int) -> None:
    pytest.importorskip("transformers")
    from transformers.models.bloom.modeling_bloom import build_alibi_tensor

    expected = build_alibi_tensor(torch.ones(1, 2), heads, torch.float64)[:, 0, 1]  # slope × position 1
    assert torch.allclose(torch.tensor(slopes(heads), dtype=torch.float64), expected)


@pytest.mark.parametrize("heads", [1, 2, 4])
@pytest.mark.parametrize("mask", ["none", "causal", "padding", "sliding+padding"])
def test_alibi_matches_sdpa_with_the_bias_as_a_float_mask(heads: int, mask: str) -> None:
    q, k, v = _random(6, 8, 12), _random(6, 8, 13), _random(6, 4, 14)
    trace = compute(matrices(q, k, v, variant="alibi", heads=heads, mask=mask, pad_keys=1, window=3))
    d_h = 8 // heads
    qt, kt, vt = (torch.tensor(m).view(6, heads, -1).transpose(0, 1) for m in (q, k, v))  # (H, 6, ·)
    distance = (torch.arange(6)[:, None] - torch.arange(6)[None, :]).abs()
    bias = -torch.tensor(slopes(heads))[:, None, None] * distance  # (H, 6, 6)
    allowed = _allowed(trace)
    float_mask = bias if allowed is None else bias.masked_fill(~allowed, -math.inf)
    expected = F.scaled_dot_product_attention(qt, kt, vt, attn_mask=float_mask)  # (H, 6, d_v/H)
    rows = allowed.any(-1) if allowed is not None else torch.ones(6, dtype=torch.bool)
    for h in range(heads):
        head = h if heads > 1 else None
        assert torch.allclose(trace.tensor("bias", head=head), bias[h].float(), atol=1e-6), h
        assert (trace.tensor("output", head=head)[rows] - expected[h][rows]).abs().max() <= 1e-6, h
    assert d_h * heads == 8
    if heads > 1:
        assert torch.allclose(trace.tensor("concat")[rows], expected.transpose(0, 1).reshape(6, 4)[rows], atol=1e-6)


# ----- sink ---------------------------------------------------------------------------------------------------
def _sink_loop(q, k, v, sink: float, allowed) -> tuple[list[list[float]], list[float], list[list[float]]]:
    """Weights, sink shares and outputs of one head, written out with Python floats."""
    d = len(q[0])
    weights, shares, outputs = [], [], []
    for i, qi in enumerate(q):
        logits = [sum(a * b for a, b in zip(qi, kj)) / math.sqrt(d) for kj in k]
        keep = [allowed is None or bool(allowed[i][j]) for j in range(len(k))]
        top = max([x for x, ok in zip(logits, keep) if ok] + [sink])
        exps = [math.exp(x - top) if ok else 0.0 for x, ok in zip(logits, keep)]
        total = sum(exps) + math.exp(sink - top)
        weights.append([e / total for e in exps])
        shares.append(math.exp(sink - top) / total)
        outputs.append([sum(w * v[j][c] for j, w in enumerate(weights[-1])) for c in range(len(v[0]))])
    return weights, shares, outputs


@pytest.mark.parametrize("heads", [1, 3])
@pytest.mark.parametrize("mask", ["none", "causal+padding", "sliding"])
def test_sink_matches_a_plain_loop(heads: int, mask: str) -> None:
    q, k, v = _random(5, 6, 15), _random(5, 6, 16), _random(5, 3, 17)
    trace = compute(matrices(q, k, v, variant="sink", heads=heads, mask=mask, pad_keys=1, window=2,
                             dtype="float64"))
    allowed = None if trace.mask is None else trace.mask.allowed.tolist()
    d_h = 6 // heads
    for h in range(heads):
        head = h if heads > 1 else None
        cols = slice(h * d_h, (h + 1) * d_h)
        split = [[row[cols] for row in m] for m in (q, k)]
        v_cols = slice(h * (3 // heads), (h + 1) * (3 // heads))
        weights, shares, outputs = _sink_loop(*split, [row[v_cols] for row in v],
                                              float(trace.params["sink"][h]), allowed)
        assert torch.allclose(trace.tensor("weights", head=head), torch.tensor(weights, dtype=torch.float64))
        assert torch.allclose(trace.tensor("sink_mass", head=head)[:, 0], torch.tensor(shares, dtype=torch.float64))
        assert torch.allclose(trace.tensor("output", head=head), torch.tensor(outputs, dtype=torch.float64))
        sums = trace.tensor("weights", head=head).sum(-1) + trace.tensor("sink_mass", head=head)[:, 0]
        assert torch.allclose(sums, torch.ones(5, dtype=torch.float64))


def test_a_row_with_nothing_to_attend_gives_everything_to_the_sink() -> None:
    q, k, v = _random(3, 4, 18), _random(3, 4, 19), _random(3, 2, 20)
    trace = compute(matrices(q, k, v, variant="sink", heads=1, custom_mask=[[1, 1, 0], [0, 0, 0], [1, 1, 1]]))
    assert trace.tensor("sink_mass")[1, 0] == 1 and torch.equal(trace.tensor("weights")[1], torch.zeros(3))
    assert any("sink takes its whole weight" in str(w) for w in trace.warnings)
    assert not any(torch.isnan(s.tensor).any() for s in trace)


# ----- flash --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("mask", MASKS)
@pytest.mark.parametrize("tile", [1, 2, 3, 7])
@pytest.mark.parametrize("fill", ["-inf", "-1e9"])
def test_flash_output_is_sdpa_and_scaled_dot(mask: str, tile: int, fill: str) -> None:
    q, k, v = _random(6, 5, 21), _random(7, 5, 22), _random(7, 3, 23)
    settings = dict(mask=mask, pad_keys=2, window=2, mask_fill=fill)
    flash = compute(matrices(q, k, v, variant="flash", tile=tile, **settings))
    plain = compute(matrices(q, k, v, variant="scaled_dot", **settings))
    assert (flash.tensor("output") - plain.tensor("output")).abs().max() <= 1e-6
    assert flash.warnings == plain.warnings
    allowed = _allowed(flash)
    expected = F.scaled_dot_product_attention(torch.tensor(q), torch.tensor(k), torch.tensor(v), attn_mask=allowed)
    rows = allowed.any(-1) if allowed is not None else torch.ones(6, dtype=torch.bool)
    assert (flash.tensor("output")[rows] - expected[rows]).abs().max() <= 1e-6
    assert flash.steps() == -(-7 // tile)


def test_flash_tiles_keep_the_running_max_sum_and_output() -> None:
    """After tile t, m, l and Õ are exactly those of softmax over the keys seen so far."""
    q, k, v = _random(4, 6, 24), _random(9, 6, 25), _random(9, 2, 26)
    trace = compute(matrices(q, k, v, variant="flash", tile=3, dtype="float64"))
    scores = torch.tensor(q, dtype=torch.float64) @ torch.tensor(k, dtype=torch.float64).T / math.sqrt(6)
    values = torch.tensor(v, dtype=torch.float64)
    for t in range(3):
        seen = scores[:, : 3 * (t + 1)]
        top = seen.amax(-1, keepdim=True)
        assert torch.allclose(trace.tensor("tile_scores", step=t), scores[:, 3 * t: 3 * (t + 1)])
        assert torch.allclose(trace.tensor("running_max", step=t), top)
        assert torch.allclose(trace.tensor("denominator", step=t), torch.exp(seen - top).sum(-1, keepdim=True))
        assert torch.allclose(trace.tensor("accumulator", step=t), torch.exp(seen - top) @ values[: 3 * (t + 1)])
        previous = scores[:, : 3 * t].amax(-1, keepdim=True) if t else None
        rescale = torch.zeros(4, 1, dtype=torch.float64) if previous is None else torch.exp(previous - top)
        assert torch.allclose(trace.tensor("rescale", step=t), rescale)
    assert [p.step for p in trace.stages if p.name == "output"] == [None]


def test_flash_refuses_what_it_cannot_show_tile_by_tile() -> None:
    from attn_tui.ask.footprint import estimate
    from attn_tui.errors import ConfigError

    text = " ".join(f"w{i}" for i in range(300))
    with pytest.raises(ConfigError, match="flash keeps every tile's stages"):
        estimate(sentence(text, variant="flash"))
