"""--softcap, --qk-norm and --gate on every score-based variant, against float64 loops written from the formulas.

The loops start from each head's q, k, v stages (checked against SDPA, nn.MultiheadAttention and
transformers elsewhere) and the trace's seeded parameters, and redo everything after them cell by cell:
RMSNorm over a head's dimensions (Qwen3, Gemma 3) or over the whole projection (OLMo-2), the rotation,
the scale, ALiBi's bias, cap·tanh(s / cap) (Gemma 2), the causal mask, the softmax (with GPT-OSS's sink),
the weighted sum, σ(x·W_g) and the gated output (Gated Attention, Qiu et al. 2025), the concat and W_o.
"""

from __future__ import annotations

import math

import pytest
import torch

from attn_tui.ask.applies import applicable
from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.attention.variants.alibi.compute import slopes
from attn_tui.cli import main
from attn_tui.explain.cell import explain
from attn_tui.trace.ops import Place
from tests.conftest import matrices, sentence

TEXT = "나는 어제 친구와 함께 학교에 갔다"
SCORED = [name for name, v in VARIANTS.items() if v.score_based and name not in ("mla", "diff")]  # those two:
# test_modifiers_mla_diff.py, whose loops follow their own formulas
EPS = 1e-6


def _rms_rows(x: list[list[float]], w: list[float]) -> list[list[float]]:
    """Each row divided by √(mean of its squares + eps), times w, one number at a time."""
    out = []
    for row in x:
        ms = sum(v * v for v in row) / len(row)
        out.append([v / math.sqrt(ms + EPS) * w[j] for j, v in enumerate(row)])
    return out


def _cols(x: list[list[float]], first: int, width: int) -> list[list[float]]:
    return [row[first:first + width] for row in x]


def _rotate(x: list[list[float]], base: float) -> list[list[float]]:
    d = len(x[0])
    half = d // 2
    out = []
    for p, row in enumerate(x):
        turned = list(row)
        for i in range(half):
            angle = p * base ** (-2 * i / d)
            a, b = row[i], row[i + half]
            turned[i] = a * math.cos(angle) - b * math.sin(angle)
            turned[i + half] = b * math.cos(angle) + a * math.sin(angle)
        out.append(turned)
    return out


def _attend(q, k, v, factor, cap, bias_slope, sink) -> list[list[float]]:
    """softmax over the causal keys of (q·k)·factor (+ ALiBi) capped, with an optional sink logit, times V."""
    out = []
    for i, qi in enumerate(q):
        logits = []
        for j, kj in enumerate(k):
            s = sum(a * b for a, b in zip(qi, kj)) * factor
            if bias_slope is not None:
                s += -bias_slope * abs(i - j)
            if cap is not None:
                s = cap * math.tanh(s / cap)
            logits.append(s if j <= i else -math.inf)
        top = max([x for x in logits if x > -math.inf] + ([sink] if sink is not None else []))
        exps = [math.exp(x - top) if x > -math.inf else 0.0 for x in logits]
        total = sum(exps) + (math.exp(sink - top) if sink is not None else 0.0)
        out.append([sum(exps[j] / total * v[j][c] for j in range(len(k))) for c in range(len(v[0]))])
    return out


def _lists(t: torch.Tensor) -> list[list[float]]:
    return t.detach().double().tolist()


def reference(trace, variant: str, heads: int, kv_heads: int, norm: str, cap: float | None, gate: bool
              ) -> dict[str, list[list[float]]]:
    """Every head's output (gated where the gate is on), and concat and projected where the variant has them."""
    p = {name: _lists(t) if t.dim() == 2 else t.double().tolist() for name, t in trace.params.items()}
    several = VARIANTS[variant].has_heads
    at = (lambda name, h: Place(name, head=h)) if several else (lambda name, h: Place(name))
    n_heads = heads if several else 1
    q = [_lists(trace.tensor(at("query", h).name, head=at("query", h).head)) for h in range(n_heads)]
    k = [_lists(trace.tensor(at("key", h).name, head=at("key", h).head)) for h in range(n_heads)]
    v = [_lists(trace.tensor(at("value", h).name, head=at("value", h).head)) for h in range(n_heads)]
    d_h = len(q[0][0])
    groups = [h // (heads // kv_heads) for h in range(heads)] if variant == "gqa" else list(range(n_heads))
    if norm == "rms":
        q = [_rms_rows(x, p["q_norm"]) for x in q]
        k = [_rms_rows(x, p["k_norm"]) for x in k]
    elif norm == "rms-all":
        whole_q = [[x for h in range(n_heads) for x in q[h][r]] for r in range(len(q[0]))]
        key_rows = [k[groups.index(g)] for g in range(max(groups) + 1)]  # each key head once
        whole_k = [[x for rows in key_rows for x in rows[r]] for r in range(len(k[0]))]
        nq, nk = _rms_rows(whole_q, p["q_norm"]), _rms_rows(whole_k, p["k_norm"])
        q = [_cols(nq, h * d_h, d_h) for h in range(n_heads)]
        k = [_cols(nk, groups[h] * d_h, d_h) for h in range(n_heads)]
    if variant == "rope":
        q, k = [_rotate(q[0], 10000.0)], [_rotate(k[0], 10000.0)]
    if variant == "general":
        w_a = p["W_a"]
        q = [[[sum(row[m] * w_a[j][m] for m in range(len(row))) for j in range(len(w_a))] for row in q[0]]]
    factor = 1.0 if variant in ("dot", "general") else 1 / math.sqrt(d_h)
    m = slopes(n_heads) if variant == "alibi" else [None] * n_heads
    sink = p["sink"] if variant == "sink" else [None] * n_heads
    outs = [_attend(q[h], k[h], v[h], factor, cap, m[h], sink[h]) for h in range(n_heads)]
    if gate:
        x = _lists(trace.operand(trace.stages[Place("gate", head=0 if several else None)].op.source))
        w_g = p["W_g"]
        d_v = len(outs[0][0])
        for h in range(n_heads):
            outs[h] = [[o * (1 / (1 + math.exp(-sum(x[i][mm] * w_g[h * d_v + c][mm] for mm in range(len(x[i]))))))
                        for c, o in enumerate(row)] for i, row in enumerate(outs[h])]
    found = {f"output@{h}": outs[h] for h in range(n_heads)}
    if several:
        found["concat"] = [[x for h in range(n_heads) for x in outs[h][i]] for i in range(len(outs[0]))]
    if variant in ("multihead", "gqa"):
        w_o = p["W_o"]
        b_o = p.get("b_o", [0.0] * len(w_o))
        found["projected"] = [[sum(c[mm] * w_o[j][mm] for mm in range(len(c))) + b_o[j] for j in range(len(w_o))]
                              for c in found["concat"]]
    return found


@pytest.mark.parametrize("variant", SCORED)
@pytest.mark.parametrize("norm,cap,gate", [("rms", None, False), ("rms-all", None, False), ("none", 2.5, False),
                                           ("none", None, True), ("rms", 1.5, True), ("rms-all", 3.0, True)])
def test_each_modifier_equals_a_float64_loop(variant: str, norm: str, cap: float | None, gate: bool) -> None:
    heads, kv_heads = (4, 2) if variant == "gqa" else (2, 2)
    trace = compute(sentence(TEXT, variant=variant, heads=heads, kv_heads=kv_heads, dim=8, mask="causal",
                             dtype="float64", qk_norm=norm, softcap=cap, gate=gate, seed=3))
    expected = reference(trace, variant, heads, kv_heads, norm, cap, gate)
    several = VARIANTS[variant].has_heads
    for key, rows in expected.items():
        name, _, head = key.partition("@")
        if name == "output" and gate:
            name = "gated"
        got = trace.tensor(name, head=int(head) if head and several else None)
        assert (got - torch.tensor(rows, dtype=torch.float64)).abs().max() <= 1e-10, (variant, key)


@pytest.mark.parametrize("variant", SCORED)
def test_every_new_stage_sits_where_the_formula_puts_it_and_its_cells_recompute(variant: str) -> None:
    trace = compute(sentence(TEXT, variant=variant, heads=2, kv_heads=1, dim=8, mask="causal", qk_norm="rms-all",
                             softcap=2.0, gate=True))
    names = trace.names()
    before_mask = "biased" if variant == "alibi" else "scores" if variant in ("dot", "general") else "scaled"
    assert names.index("query_norm") < names.index("scores") and names.index("key_norm") < names.index("scores")
    assert names.index(before_mask) < names.index("capped") < names.index("masked")
    assert names.index("output") < names.index("gate") < names.index("gated")
    if variant == "rope":
        assert names.index("key_norm") < names.index("query_rot")  # normed before the turn, as Qwen3
    for place, stage in trace.stages.items():
        if place.name in ("query_norm", "key_norm", "capped", "gate", "gated"):
            for index in ((0, 0), (3, 1), (5, stage.tensor.shape[1] - 1)):
                arithmetic = explain(trace, place, index)
                assert arithmetic.matches, (place.key, index, arithmetic.total, arithmetic.expected)
    gate_stage = trace.tensor("gate", head=0 if VARIANTS[variant].has_heads else None)
    assert bool(((gate_stage > 0) & (gate_stage < 1)).all())
    assert trace.geometry[0].soft_cap == 2.0


def test_the_cap_bounds_every_score_and_keeps_small_ones() -> None:
    trace = compute(sentence(TEXT, variant="dot", dim=16, softcap=4.0, seed=1, dtype="float64"))
    capped, scores = trace.tensor("capped"), trace.tensor("scores")
    assert scores.abs().max() > 8 and capped.abs().max() < 4.0
    small = scores.abs() < 0.05
    assert torch.allclose(capped[small], scores[small], atol=1e-4)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("cap", [1e-30, 1e6])
def test_a_cap_at_either_end_of_its_range_stays_finite_in_half_precision(dtype: str, cap: float) -> None:
    trace = compute(sentence(TEXT, variant="gqa", heads=2, softcap=cap, qk_norm="rms", gate=True, dtype=dtype))
    assert not trace.warnings
    for stage in trace:
        assert bool(torch.isfinite(stage.tensor.float()).all()), stage.key


def test_the_norm_takes_each_row_to_the_size_of_its_weight() -> None:
    trace = compute(sentence(TEXT, variant="scaled_dot", dim=8, qk_norm="rms", dtype="float64"))
    normed, w = trace.tensor("query_norm"), trace.params["q_norm"]
    assert torch.allclose((normed / w).pow(2).mean(-1), torch.ones(normed.shape[0], dtype=torch.float64), atol=1e-4)
    assert not torch.allclose(w, torch.ones_like(w))  # seeded near one, never all ones


def test_the_cap_works_on_a_long_input_read_by_tiles() -> None:
    text = " ".join(f"w{i}" for i in range(40))
    whole = compute(sentence(text, variant="scaled_dot", softcap=0.5, mask="causal", gate=True), lazy=False)
    tiles = compute(sentence(text, variant="scaled_dot", softcap=0.5, mask="causal", gate=True), lazy=True)
    assert torch.allclose(whole.tensor("gated"), tiles.tensor("gated"), atol=1e-6)
    lazy = tiles.stages[Place("capped")]
    assert lazy.lazy and torch.allclose(whole.tensor("capped"), lazy.data[0:40, 0:40], atol=1e-6)


def test_applies_where_scores_are_q_dot_k_and_the_gate_needs_token_vectors() -> None:
    q = [[1.0, 0.0], [0.0, 1.0]]
    assert {"softcap", "qk_norm", "gate"} <= applicable(sentence("a b", variant="rope"))
    assert {"softcap", "qk_norm"} <= applicable(matrices(q, q, q, variant="scaled_dot"))
    assert "gate" not in applicable(matrices(q, q, q, variant="scaled_dot"))
    for variant in ("additive", "concat", "flash"):
        assert not {"softcap", "qk_norm", "gate"} & applicable(sentence("a b", variant=variant))


@pytest.mark.parametrize("argv,fragment", [
    (["--text", "a b", "--variant", "flash", "--softcap", "5"], "--softcap does not apply to flash"),
    (["--text", "a b", "--variant", "additive", "--qk-norm", "rms"], "--qk-norm does not apply to additive"),
    (["--text", "a b", "--variant", "concat", "--gate"], "--gate does not apply to concat"),
    (["--q", "Q", "--k", "Q", "--v", "Q", "--gate"], "--gate does not apply to typed Q, K, V"),
    (["--text", "a b", "--softcap", "0"], "must be a number above 0 and at most 1000000"),
    (["--text", "a b", "--softcap", "inf"], "must be a number above 0 and at most 1000000"),
    (["--text", "a b", "--softcap", "-1"], "must be a number above 0 and at most 1000000"),
    (["--text", "a b", "--softcap", "1e300"], "must be a number above 0 and at most 1000000"),
    (["--text", "a b", "--qk-norm", "layer"], "invalid choice"),
])
def test_what_does_not_apply_is_one_line(capsys, tmp_path, monkeypatch, argv: list[str], fragment: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Q").write_text("1 0\n0 1\n")
    with pytest.raises(SystemExit) as exit_:
        main(["stages", *argv])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


def test_the_json_carries_the_new_stages_and_their_parameters(capsys) -> None:
    import json

    assert main(["stages", "--text", "나는 학교에 간다", "--variant", "gqa", "--heads", "2", "--softcap", "4",
                 "--qk-norm", "rms", "--gate", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["softcap"] == 4 and doc["settings"]["qk_norm"] == "rms" and doc["settings"]["gate"]
    assert {"q_norm", "k_norm", "W_g"} <= set(doc["params"])
    names = {s["name"] for s in doc["stages"]}
    assert {"query_norm", "key_norm", "capped", "gate", "gated"} <= names
