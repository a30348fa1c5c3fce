"""dot, general, additive and concat against plain Python loops written from the formulas."""

from __future__ import annotations

import math

import pytest
import torch

from attn_tui.attention.engine import compute
from tests.conftest import matrices, sentence


def _rows(t: torch.Tensor) -> list[list[float]]:
    return t.double().tolist()


def _dot(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b))


def _matvec(w: list[list[float]], x: list[float]) -> list[float]:
    return [_dot(row, x) for row in w]


def _softmax_rows(scores: list[list[float]], mask: list[list[bool]] | None) -> list[list[float]]:
    out = []
    for i, row in enumerate(scores):
        allowed = [True] * len(row) if mask is None else mask[i]
        kept = [s for s, a in zip(row, allowed) if a]
        if not kept:
            out.append([0.0] * len(row))
            continue
        top = max(kept)
        exps = [math.exp(s - top) if a else 0.0 for s, a in zip(row, allowed)]
        total = sum(exps)
        out.append([e / total for e in exps])
    return out


def _weighted_sum(weights: list[list[float]], v: list[list[float]]) -> list[list[float]]:
    return [[sum(w * v[j][c] for j, w in enumerate(row)) for c in range(len(v[0]))] for row in weights]


def _naive_scores(variant: str, q, k, params) -> list[list[float]]:
    if variant == "dot":
        return [[_dot(qi, kj) for kj in k] for qi in q]
    if variant == "general":
        w_a = _rows(params["W_a"])
        return [[_dot(_matvec(w_a, qi), kj) for kj in k] for qi in q]
    if variant == "additive":
        w_a, u_a, v_a = _rows(params["W_a"]), _rows(params["U_a"]), params["v_a"].double().tolist()
        return [[_dot(v_a, [math.tanh(a + b) for a, b in zip(_matvec(w_a, qi), _matvec(u_a, kj))])
                 for kj in k] for qi in q]
    if variant == "concat":
        w_c, v_c = _rows(params["W_c"]), params["v_c"].double().tolist()
        return [[_dot(v_c, [math.tanh(x) for x in _matvec(w_c, qi + kj)]) for kj in k] for qi in q]
    raise AssertionError(variant)


def _check(trace, q, k, v) -> None:
    mask = None if trace.mask is None else trace.mask.allowed.tolist()
    scores = _naive_scores(trace.meta.variant, q, k, trace.params)
    weights = _softmax_rows(scores, mask)
    output = _weighted_sum(weights, v)
    assert torch.allclose(trace.tensor("scores").double(), torch.tensor(scores, dtype=torch.float64), atol=1e-5)
    assert torch.allclose(trace.tensor("weights").double(), torch.tensor(weights, dtype=torch.float64), atol=1e-6)
    assert torch.allclose(trace.tensor("output").double(), torch.tensor(output, dtype=torch.float64), atol=1e-5)


@pytest.mark.parametrize("variant", ["dot", "general", "additive", "concat"])
@pytest.mark.parametrize("mask", ["none", "causal", "padding", "causal+padding"])
def test_typed_matrices_match_loops(variant: str, mask: str) -> None:
    gen = torch.Generator().manual_seed(hash((variant, mask)) % 1000)
    d_k = 3 if variant == "dot" else 5  # learned variants accept a different key width
    q = torch.randn(3, 3, generator=gen).tolist()
    k = torch.randn(5, d_k, generator=gen).tolist()
    v = torch.randn(5, 2, generator=gen).tolist()
    trace = compute(matrices(q, k, v, variant=variant, mask=mask, pad_keys=2, dim=6, dtype="float64"))
    _check(trace, q, k, v)


@pytest.mark.parametrize("variant", ["dot", "general", "additive", "concat"])
def test_sentence_projections_match_loops(variant: str) -> None:
    trace = compute(sentence("나는 학교에 간다 <pad>", variant=variant, mask="padding", positional=True,
                             dtype="float64", seed=3))
    x = _rows(trace.tensor("embedded_pos"))
    for name, stage in (("W_q", "query"), ("W_k", "key"), ("W_v", "value")):
        w = _rows(trace.params[name])
        naive = [_matvec(w, xi) for xi in x]
        assert torch.allclose(trace.tensor(stage), torch.tensor(naive, dtype=torch.float64), atol=1e-10)
    _check(trace, _rows(trace.tensor("query")), _rows(trace.tensor("key")), _rows(trace.tensor("value")))


def test_concat_equals_additive_with_split_weights() -> None:
    """v_cᵀ tanh(W_c[q; k]) is additive attention with W_c = [W_a | U_a]: one identity, two views."""
    gen = torch.Generator().manual_seed(5)
    q, k, v = (torch.randn(n, 4, generator=gen).tolist() for n in (2, 3, 3))
    concat = compute(matrices(q, k, v, variant="concat"))
    w_c, v_c = concat.params["W_c"], concat.params["v_c"]
    qt, kt = torch.tensor(q), torch.tensor(k)
    split = torch.tanh((qt @ w_c[:, :4].T)[:, None] + (kt @ w_c[:, 4:].T)[None]) @ v_c
    assert torch.allclose(concat.tensor("scores"), split, atol=1e-6)


def test_lookup_sample_weights_and_outputs(lookup_qkv) -> None:
    trace = compute(matrices(*lookup_qkv))
    weights, output = trace.tensor("weights"), trace.tensor("output")
    assert torch.allclose(weights, torch.tensor([[0, 1, 0, 0], [0, 0, .5, .5], [.5, .5, 0, 0.]]), atol=1e-6)
    assert torch.allclose(output, torch.tensor([[10, 0], [550, 5.5], [5.5, 0.]]), atol=1e-4)


@pytest.mark.parametrize("variant", ["dot", "scaled_dot", "general", "additive", "concat", "multihead"])
@pytest.mark.parametrize("mask,fill", [("none", "-inf"), ("causal+padding", "-inf"), ("padding", "-1e9")])
def test_weights_rows_sum_to_one_or_zero(variant: str, mask: str, fill: str) -> None:
    trace = compute(sentence("<pad> 나는 학교에 간다 <pad>", variant=variant, mask=mask, mask_fill=fill,
                             heads=2, dim=8))
    for stage in trace:
        if stage.name != "weights":
            continue
        sums = stage.tensor.sum(dim=-1)
        for i, total in enumerate(sums.tolist()):
            if trace.mask is not None and not trace.mask.allowed[i].any() and fill == "-inf":
                assert total == 0
            else:
                assert abs(total - 1) < 1e-6
        assert not torch.isnan(stage.tensor).any()
