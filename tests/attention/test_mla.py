"""Multi-head latent attention (variant `mla`) against a float64 loop written from DeepSeek-V2's formulas.

The reference reads only the trace's input X and its seeded parameters, and writes every step out as loops:
the query's low-rank path and RMSNorm, the latent, the shared rotary key turned pair by pair (i, i + d/2),
the keys and values rebuilt per head, the scores as content plus position, a causal softmax and W_o.
"""

from __future__ import annotations

import math

import pytest
import torch

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.attention.variants.mla.compute import sizes
from attn_tui.explain.cell import explain
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Trace
from tests.cli.test_cli import run_cli
from tests.conftest import sentence, x_matrix

TEXT = "나는 어제 친구와 함께 학교에 갔다"


def _rms(row: list[float], weight: list[float], eps: float = 1e-6) -> list[float]:
    mean = sum(v * v for v in row) / len(row)
    return [v / math.sqrt(mean + eps) * w for v, w in zip(row, weight)]


def _matvec(w: torch.Tensor, row: list[float]) -> list[float]:
    """y = W·x for W (out, in) written as loops."""
    return [sum(float(w[o, i]) * row[i] for i in range(len(row))) for o in range(w.shape[0])]


def _turn(row: list[float], p: int, base: float) -> list[float]:
    """Rotate-half RoPE of one row at position p: pair (i, i + d/2) by the angle p·base^(−2i/d)."""
    d, half = len(row), len(row) // 2
    out = list(row)
    for i in range(half):
        angle = p * base ** (-2 * i / d)
        c, s = math.cos(angle), math.sin(angle)
        out[i] = row[i] * c - row[i + half] * s
        out[i + half] = row[i + half] * c + row[i] * s
    return out


def reference(trace: Trace, heads: int, causal: bool) -> tuple[list[list[list[float]]], list[list[float]]]:
    """Each head's weights (H, N, N) and the projected output (N, d), from X and the parameters alone."""
    p = {name: t.double() for name, t in trace.params.items()}
    x = trace.tensor("embedding").double().tolist()
    n, d = len(x), len(x[0])
    m = sizes(d, heads)
    dn, dr, dv = m.d_nope, m.d_rope, m.d_v
    latent = [_rms(_matvec(p["W_dkv"], row), p["kv_norm"].tolist()) for row in x]  # (N, r)
    k_rot = [_turn(_matvec(p["W_kr"], row), t, 10000.0) for t, row in enumerate(x)]  # (N, d_r)
    queries = [_matvec(p["W_qb"], _rms(_matvec(p["W_qa"], row), p["q_norm"].tolist())) for row in x]  # (N, H·d_qk)
    keys_nope = [_matvec(p["W_uk"], row) for row in latent]  # (N, H·d_nope)
    values = [_matvec(p["W_uv"], row) for row in latent]  # (N, H·d_v)
    weights, concat = [], [[0.0] * (heads * dv) for _ in range(n)]
    for h in range(heads):
        head_weights = []
        for i in range(n):
            q = queries[i][h * (dn + dr):(h + 1) * (dn + dr)]
            q_nope, q_rot = q[:dn], _turn(q[dn:], i, 10000.0)
            scores = []
            for j in range(n):
                content = sum(a * b for a, b in zip(q_nope, keys_nope[j][h * dn:(h + 1) * dn]))
                position = sum(a * b for a, b in zip(q_rot, k_rot[j]))
                scores.append((content + position) / math.sqrt(dn + dr) if not causal or j <= i else -math.inf)
            top = max(scores)
            exps = [math.exp(s - top) for s in scores]
            row = [e / sum(exps) for e in exps]
            head_weights.append(row)
            for c in range(dv):
                concat[i][h * dv + c] = sum(row[j] * values[j][h * dv + c] for j in range(n))
        weights.append(head_weights)
    projected = [_matvec(p["W_o"], row) for row in concat]
    return weights, projected


@pytest.mark.parametrize("absorbed", [False, True])
@pytest.mark.parametrize(("heads", "dim", "mask"), [(2, 8, "causal"), (4, 16, "none"), (1, 4, "causal")])
def test_mla_equals_a_float64_loop_of_the_paper_formula(absorbed: bool, heads: int, dim: int, mask: str) -> None:
    trace = compute(sentence(TEXT, variant="mla", heads=heads, dim=dim, mask=mask, dtype="float64",
                             absorbed=absorbed))
    weights, projected = reference(trace, heads, mask == "causal")
    for h in range(heads):
        assert torch.allclose(trace.tensor("weights", head=h), torch.tensor(weights[h], dtype=torch.float64),
                              atol=1e-12)
    assert torch.allclose(trace.tensor("projected"), torch.tensor(projected, dtype=torch.float64), atol=1e-12)


def test_the_absorbed_form_has_the_expanded_forms_weights_and_never_rebuilds_a_key() -> None:
    expanded = compute(sentence(TEXT, variant="mla", heads=2, dim=8, mask="causal"))
    absorbed = compute(sentence(TEXT, variant="mla", heads=2, dim=8, mask="causal", absorbed=True))
    for h in range(2):
        assert torch.allclose(expanded.tensor("weights", head=h), absorbed.tensor("weights", head=h), atol=1e-6)
    assert "query_absorbed" in absorbed.names() and "key" not in absorbed.names()
    assert "key_nope" in expanded.names() and "query_absorbed" not in expanded.names()
    # the absorbed query meets the cached latent: its width is kv_rank, not a head's key width
    assert absorbed.tensor("query_absorbed", head=0).shape[-1] == sizes(8, 2).kv_rank


def test_the_stage_names_follow_the_registry() -> None:
    stages = VARIANTS["mla"].stages
    for absorbed in (False, True):
        names = compute(sentence("a b c", variant="mla", heads=2, dim=8, absorbed=absorbed)).names()
        assert names[0] == "embedding"
        assert [s for s in stages if s in names] == names[1:]


def test_the_cache_stage_holds_the_latent_and_the_rotary_key_and_says_what_mha_would_cache() -> None:
    trace = compute(sentence("a b c d", variant="mla", heads=4, dim=16))
    m = sizes(16, 4)
    cache = trace.stages[Place("latent_cache")]
    assert cache.data.shape == (4, m.kv_rank + m.d_rope)
    assert torch.equal(cache.data, torch.cat([trace.tensor("kv_latent_norm"), trace.tensor("key_rot")], dim=-1))
    caption = str(cache.formula)
    plain = 4 * (m.d_nope + m.d_rope + m.d_v)
    assert f"{m.cached()} numbers ({m.cached() * 4} bytes)" in caption
    assert f"{plain} numbers ({plain * 4} bytes)" in caption


def test_the_inspector_recomputes_every_cell_of_every_mla_stage() -> None:
    for absorbed in (False, True):
        trace = compute(sentence("나는 학교에 간다", variant="mla", heads=2, dim=8, mask="causal", absorbed=absorbed))
        for place, stage in trace.stages.items():
            if place.name == "embedding":
                continue
            rows, cols = stage.data.shape
            for i in range(rows):
                for j in range(cols):
                    found = explain(trace, place, (i, j))
                    assert found.matches, (place.key, i, j, found.total, found.stored)


def test_typed_x_and_odd_widths_are_handled() -> None:
    trace = compute(x_matrix([[1, 0, 2, 1, 0, 1], [0, 1, 1, 0, 2, 0], [1, 1, 0, 0, 1, 1]], variant="mla", heads=3))
    assert trace.tensor("query_rot", head=2).shape == (3, 2)  # a head 2 wide still turns one pair


def test_the_cli_lists_the_stages_and_refuses_absorbed_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _err = run_cli(capsys, "stages", "--variant", "mla", "--text", "a b", "--absorbed", "--stage",
                              "query_absorbed")
    assert code == 0 and "q_abs" in out
    code, _out, err = run_cli(capsys, "stages", "--variant", "gqa", "--text", "a b", "--absorbed")
    assert code == 2 and "--absorbed" in err and "mla" in err


def test_the_api_takes_absorbed_for_mla_only() -> None:
    import attn_tui
    from attn_tui.errors import ConfigError

    trace = attn_tui.compute("the cat sat", variant="mla", heads=2, absorbed=True)
    assert "query_absorbed" in trace.names()
    with pytest.raises(ConfigError, match="belongs to mla"):
        attn_tui.compute("the cat sat", variant="gqa", absorbed=True)


def test_the_cli_json_holds_every_stage_and_the_parameters_that_recompute_it(capsys: pytest.CaptureFixture[str]
                                                                             ) -> None:
    import json

    code, out, _err = run_cli(capsys, "stages", "--variant", "mla", "--text", "나는 학교에 간다", "--heads", "2",
                              "--mask", "causal", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    names = [s["name"] for s in doc["stages"]]
    assert {"kv_latent", "latent_cache", "key_rot", "weights"} <= set(names)
    weights = [torch.tensor(s["data"]) for s in doc["stages"] if s["name"] == "weights"]
    assert len(weights) == 2 and all(torch.allclose(w.sum(-1), torch.ones(3)) for w in weights)
    cache = next(s for s in doc["stages"] if s["name"] == "latent_cache")
    assert cache["shape"] == [3, sizes(8, 2).cached()]
