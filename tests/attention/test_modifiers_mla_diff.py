"""--softcap, --qk-norm and --gate on multi-head latent attention and differential attention, against float64 loops.

MLA's loop starts from X and the trace's seeded parameters alone (the query's low-rank path, the latent, the
rotary parts), norms each head's whole query and key [no-position | rotary] as a model with QK-norm would, caps
the scaled score, masks, takes the softmax and gates each head's output before W_o. Differential attention's loop
starts from each head's q, k, v stages, norms each half, caps each of the two maps before its softmax, subtracts,
norms the head and gates it. Nothing here reads a stage the variant computed after those starting points.
"""

from __future__ import annotations

import math

import pytest
import torch

from attn_tui.ask.applies import applicable, not_applying
from attn_tui.attention.engine import compute
from attn_tui.attention.variants.diff.maps import lambda_init
from attn_tui.attention.variants.mla.compute import sizes
from attn_tui.cli import main
from attn_tui.explain.cell import explain
from attn_tui.i18n import set_language
from attn_tui.trace.stage import Trace
from tests.conftest import sentence

TEXT = "나는 어제 친구와 함께 학교에 갔다"
MODIFIERS = [("rms", None, False), ("rms-all", None, False), ("none", 2.5, False), ("none", None, True),
             ("rms", 1.5, True), ("rms-all", 0.7, True)]


def _rms(row: list[float], weight: list[float], eps: float) -> list[float]:
    mean = sum(v * v for v in row) / len(row)
    return [v / math.sqrt(mean + eps) * w for v, w in zip(row, weight, strict=True)]


def _matvec(w: list[list[float]], row: list[float]) -> list[float]:
    return [sum(w[o][i] * row[i] for i in range(len(row))) for o in range(len(w))]


def _turn(row: list[float], p: int, base: float = 10000.0) -> list[float]:
    d, half = len(row), len(row) // 2
    out = list(row)
    for i in range(half):
        angle = p * base ** (-2 * i / d)
        out[i] = row[i] * math.cos(angle) - row[i + half] * math.sin(angle)
        out[i + half] = row[i + half] * math.cos(angle) + row[i] * math.sin(angle)
    return out


def _norm_heads(rows: list[list[list[float]]], norm: str, weight: list[float], eps: float
                ) -> list[list[list[float]]]:
    """rows[h][i] normed per head (rms) or as one row of every head side by side (rms-all)."""
    if norm == "rms":
        return [[_rms(r, weight, eps) for r in head] for head in rows]
    if norm == "rms-all":
        width = len(rows[0][0])
        joined = [_rms([x for head in rows for x in head[i]], weight, eps) for i in range(len(rows[0]))]
        return [[row[h * width:(h + 1) * width] for row in joined] for h in range(len(rows))]
    return rows


def _attend(q: list[list[float]], k: list[list[float]], factor: float, cap: float | None) -> list[list[float]]:
    """The causal softmax of each capped, scaled score, one cell at a time."""
    weights = []
    for i, qi in enumerate(q):
        logits = []
        for j in range(i + 1):
            s = sum(a * b for a, b in zip(qi, k[j], strict=True)) * factor
            logits.append(cap * math.tanh(s / cap) if cap is not None else s)
        top = max(logits)
        exps = [math.exp(s - top) for s in logits]
        weights.append([e / sum(exps) for e in exps] + [0.0] * (len(k) - i - 1))
    return weights


def _gate(out: list[list[float]], x: list[list[float]], w_g: list[list[float]], first: int) -> list[list[float]]:
    return [[o / (1 + math.exp(-sum(a * b for a, b in zip(x[i], w_g[first + c], strict=True))))
             for c, o in enumerate(row)] for i, row in enumerate(out)]


def _params(trace: Trace) -> dict[str, list]:
    return {name: t.double().tolist() for name, t in trace.params.items()}


def mla_reference(trace: Trace, heads: int, norm: str, cap: float | None, gate: bool) -> dict[str, list]:
    """Each head's weights and (gated) output, and the projected output, from X and the parameters alone."""
    p = _params(trace)
    x = trace.tensor("embedding").double().tolist()
    n = len(x)
    m = sizes(len(x[0]), heads)
    dn, dv, dq = m.d_nope, m.d_v, m.d_qk
    latent = [_rms(_matvec(p["W_dkv"], row), p["kv_norm"], 1e-6) for row in x]  # (N, r)
    k_rot = [_turn(_matvec(p["W_kr"], row), t) for t, row in enumerate(x)]  # (N, d_r)
    queries = [_matvec(p["W_qb"], _rms(_matvec(p["W_qa"], row), p["q_norm"], 1e-6)) for row in x]  # (N, H·d_qk)
    keys_nope = [_matvec(p["W_uk"], row) for row in latent]  # (N, H·d_nope)
    values = [_matvec(p["W_uv"], row) for row in latent]  # (N, H·d_v)
    q = [[queries[i][h * dq:h * dq + dn] + _turn(queries[i][h * dq + dn:(h + 1) * dq], i) for i in range(n)]
         for h in range(heads)]  # (H, N, d_qk): [q_nope | q_rot]
    k = [[keys_nope[j][h * dn:(h + 1) * dn] + k_rot[j] for j in range(n)] for h in range(heads)]
    if norm != "none":
        q = _norm_heads(q, norm, p["q_head_norm"], 1e-6)
        k = _norm_heads(k, norm, p["k_head_norm"], 1e-6)
    found: dict[str, list] = {}
    concat = [[] for _ in range(n)]
    for h in range(heads):
        weights = _attend(q[h], k[h], 1 / math.sqrt(dq), cap)
        out = [[sum(weights[i][j] * values[j][h * dv + c] for j in range(n)) for c in range(dv)] for i in range(n)]
        if gate:
            out = _gate(out, x, p["W_g"], h * dv)
        found[f"weights@{h}"], found[f"{'gated' if gate else 'output'}@{h}"] = weights, out
        for i in range(n):
            concat[i] += out[i]
    found["projected"] = [_matvec(p["W_o"], row) for row in concat]
    return found


def diff_reference(trace: Trace, heads: int, norm: str, cap: float | None, gate: bool, depth: int
                   ) -> dict[str, list]:
    """Each map, the difference and each head's normed (and gated) output, from the heads' q, k, v stages."""
    p = _params(trace)
    x = trace.tensor("embedding").double().tolist()
    q = [trace.tensor("query", head=h).double().tolist() for h in range(heads)]
    k = [trace.tensor("key", head=h).double().tolist() for h in range(heads)]
    v = [trace.tensor("value", head=h).double().tolist() for h in range(heads)]
    n, width = len(x), len(q[0][0])
    d = width // 2
    halves_q = [[row[half * d:(half + 1) * d] for row in q[h]] for h in range(heads) for half in (0, 1)]
    halves_k = [[row[half * d:(half + 1) * d] for row in k[h]] for h in range(heads) for half in (0, 1)]
    if norm != "none":  # rms-all: every head's halves side by side are the projection's row
        halves_q = _norm_heads(halves_q, norm, p["q_norm"], 1e-6)
        halves_k = _norm_heads(halves_k, norm, p["k_norm"], 1e-6)
    init = lambda_init(depth)
    dot = lambda a, b: sum(s * t for s, t in zip(a, b, strict=True))  # noqa: E731
    lam = math.exp(dot(p["lambda_q1"], p["lambda_k1"])) - math.exp(dot(p["lambda_q2"], p["lambda_k2"])) + init
    found: dict[str, list] = {}
    for h in range(heads):
        first, second = (_attend(halves_q[2 * h + half], halves_k[2 * h + half], 1 / math.sqrt(d), cap)
                         for half in (0, 1))
        diff = [[a - lam * b for a, b in zip(r1, r2, strict=True)] for r1, r2 in zip(first, second, strict=True)]
        out = [[sum(diff[i][j] * v[h][j][c] for j in range(n)) for c in range(width)] for i in range(n)]
        normed = [[(1 - init) * o / math.sqrt(sum(t * t for t in row) / width + 1e-5) for o in row] for row in out]
        if gate:
            normed = _gate(normed, x, p["W_g"], h * width)
        found[f"weights_1@{h}"], found[f"weights_2@{h}"], found[f"diff_weights@{h}"] = first, second, diff
        found[f"{'gated' if gate else 'head_norm'}@{h}"] = normed
    return found


def _check(trace: Trace, expected: dict[str, list], what: tuple[object, ...]) -> None:
    for key, rows in expected.items():
        name, _, head = key.partition("@")
        got = trace.tensor(name, head=int(head) if head else None)
        assert (got - torch.tensor(rows, dtype=torch.float64)).abs().max() <= 1e-10, (*what, key)


@pytest.mark.parametrize(("norm", "cap", "gate"), MODIFIERS)
def test_mla_with_each_modifier_equals_a_float64_loop(norm: str, cap: float | None, gate: bool) -> None:
    trace = compute(sentence(TEXT, variant="mla", heads=2, dim=8, mask="causal", dtype="float64", qk_norm=norm,
                             softcap=cap, gate=gate, seed=5))
    _check(trace, mla_reference(trace, 2, norm, cap, gate), ("mla", norm, cap, gate))


@pytest.mark.parametrize(("cap", "gate"), [(1.5, False), (None, True), (0.8, True)])
def test_the_absorbed_form_takes_the_cap_and_the_gate_and_keeps_the_expanded_forms_numbers(
        cap: float | None, gate: bool) -> None:
    args = dict(variant="mla", heads=4, dim=16, mask="causal", dtype="float64", softcap=cap, gate=gate, seed=2)
    absorbed = compute(sentence(TEXT, absorbed=True, **args))
    _check(absorbed, mla_reference(absorbed, 4, "none", cap, gate), ("absorbed", cap, gate))
    assert "key_nope" not in absorbed.names()


@pytest.mark.parametrize("norm", ["rms", "rms-all"])
def test_the_absorbed_form_norms_keys_it_never_builds_and_keeps_the_expanded_forms_numbers(norm: str) -> None:
    args = dict(variant="mla", heads=2, dim=8, mask="causal", dtype="float64", qk_norm=norm, softcap=2.0, gate=True,
                seed=5)
    absorbed, expanded = compute(sentence(TEXT, absorbed=True, **args)), compute(sentence(TEXT, **args))
    _check(absorbed, mla_reference(absorbed, 2, norm, 2.0, True), ("absorbed", norm))
    for h in range(2):
        assert (absorbed.tensor("weights", head=h) - expanded.tensor("weights", head=h)).abs().max() <= 1e-12
    names = absorbed.names()
    assert "key_nope" not in names and "key_norm" not in names and "key" not in names  # no key was ever built
    assert names.index("query_norm") < names.index("query_absorbed") < names.index("scores")
    scales = [place for place in absorbed.stages if place.name == "key_scale"]
    assert len(scales) == (1 if norm == "rms-all" else 2)  # one factor for the whole projection, or one a head
    for place, stage in absorbed.stages.items():
        if place.name in ("key_scale", "query_absorbed", "scores"):
            for index in ((0, 0), (5, stage.shape[1] - 1), (3, 0)):
                assert explain(absorbed, place, index).matches, (place.key, index)


@pytest.mark.parametrize(("norm", "cap", "gate"), MODIFIERS)
def test_diff_with_each_modifier_equals_a_float64_loop(norm: str, cap: float | None, gate: bool) -> None:
    trace = compute(sentence(TEXT, variant="diff", heads=2, dim=8, mask="causal", dtype="float64", qk_norm=norm,
                             softcap=cap, gate=gate, seed=7, depth=2))
    _check(trace, diff_reference(trace, 2, norm, cap, gate, 2), ("diff", norm, cap, gate))


def test_diff_on_one_head_gates_and_caps_without_a_concat() -> None:
    trace = compute(sentence(TEXT, variant="diff", heads=1, dim=8, mask="causal", dtype="float64", qk_norm="rms",
                             softcap=1.0, gate=True))
    _check(trace, {k.partition("@")[0]: rows for k, rows in diff_reference(trace, 1, "rms", 1.0, True, 0).items()},
           ("one head",))
    assert "concat" not in trace.names()


NEW = {"mla": ("query_full", "query_norm", "key_norm", "capped", "gate", "gated"),
       "diff": ("query_1_norm", "query_2_norm", "key_1_norm", "key_2_norm", "capped_1", "capped_2", "gate",
                "gated")}


@pytest.mark.parametrize("variant", list(NEW))
@pytest.mark.parametrize("norm", ["rms", "rms-all"])
def test_the_new_stages_sit_in_order_and_the_inspector_recomputes_their_cells(variant: str, norm: str) -> None:
    trace = compute(sentence(TEXT, variant=variant, heads=2, dim=8, mask="causal", qk_norm=norm, softcap=2.0,
                             gate=True))
    names = trace.names()
    if variant == "mla":
        assert names.index("key") < names.index("key_norm") < names.index("scores") < names.index("capped")
        assert names.index("query_rot") < names.index("query_full") < names.index("query_norm")
        assert names.index("capped") < names.index("masked") and names.index("gated") < names.index("concat")
    else:
        for n in (1, 2):
            assert (names.index(f"key_{n}_norm") < names.index(f"scores_{n}") < names.index(f"scaled_{n}")
                    < names.index(f"capped_{n}") < names.index(f"masked_{n}"))
        assert names.index("head_norm") < names.index("gate") < names.index("gated") < names.index("concat")
    seen = set()
    for place, stage in trace.stages.items():
        if place.name in NEW[variant]:
            seen.add(place.name)
            for index in ((0, 0), (3, 1), (5, stage.tensor.shape[1] - 1)):
                arithmetic = explain(trace, place, index)
                assert arithmetic.matches and arithmetic.lines, (place.key, index, arithmetic)
    assert seen == set(NEW[variant])


@pytest.mark.parametrize("variant", ["mla", "diff"])
def test_the_cap_bounds_every_score_of_every_map(variant: str) -> None:
    trace = compute(sentence(TEXT, variant=variant, heads=2, dim=16, softcap=0.3, seed=1))
    capped = [stage.tensor for place, stage in trace.stages.items() if place.name.startswith("capped")]
    assert len(capped) == (2 if variant == "mla" else 4)
    assert all(float(t.abs().max()) <= 0.3 + 1e-6 for t in capped)  # tanh saturates to ±1 in float32
    scaled = [stage.tensor for place, stage in trace.stages.items() if place.name.startswith("scaled")]
    assert max(float(t.abs().max()) for t in scaled) > 0.6  # the cap had something to press


@pytest.mark.parametrize("variant", ["mla", "diff"])
def test_the_settings_pane_offers_the_three_options(variant: str) -> None:
    assert {"softcap", "qk_norm", "gate"} <= applicable(sentence("a b", variant=variant))


def test_linear_refuses_them_and_says_why_in_both_languages() -> None:
    request = sentence("a b", variant="linear", softcap=3.0, qk_norm="rms", gate=True)
    assert not {"softcap", "qk_norm", "gate"} & applicable(request)
    lines = [str(line) for line in not_applying(request, {"softcap", "qk_norm", "gate"})]
    assert len(lines) == 3 and all("no scores q·k" in line and "not a softmax" in line for line in lines)
    set_language("ko")  # the autouse fixture puts English back after the test
    korean = [str(line) for line in not_applying(request, {"gate"})]
    assert korean[0] != lines[2] and "--gate" in korean[0] and "q·k" in korean[0]


@pytest.mark.parametrize("argv", [
    ["--variant", "mla", "--softcap", "30", "--qk-norm", "rms", "--gate"],
    ["--variant", "mla", "--absorbed", "--softcap", "30", "--qk-norm", "rms-all", "--gate"],
    ["--variant", "diff", "--heads", "2", "--softcap", "30", "--qk-norm", "rms-all", "--gate"],
])
def test_the_cli_accepts_them(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert main(["stages", "--text", "나는 학교에 간다", *argv]) == 0
    out = capsys.readouterr().out
    assert "gated" in out and ("capped" in out)


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--variant", "linear", "--softcap", "5"], "--softcap does not apply to linear: it has no scores q·k"),
    (["--variant", "linear", "--gate"], "its implied matrix is not a softmax"),
    (["--variant", "diff", "--q", "Q", "--k", "Q", "--v", "Q", "--gate"], "--gate does not apply to typed Q, K, V"),
])
def test_what_does_not_apply_is_one_line(capsys: pytest.CaptureFixture[str], tmp_path, monkeypatch,
                                         argv: list[str], fragment: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "Q").write_text("1 0\n0 1\n")
    text = [] if "--q" in argv else ["--text", "a b"]
    with pytest.raises(SystemExit) as exit_:
        main(["stages", *text, *argv])
    _, err = capsys.readouterr()
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize("variant", ["mla", "diff"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_with_every_modifier_stays_finite_and_every_cell_recomputes(variant: str, dtype: str) -> None:
    trace = compute(sentence(TEXT + " <pad>", variant=variant, heads=2, dim=8, mask="causal+padding", dtype=dtype,
                             softcap=1e6 if dtype == "float16" else 2.0, qk_norm="rms-all", gate=True))
    assert not trace.warnings
    for place, stage in trace.stages.items():
        if not place.name.startswith("masked"):  # masked cells hold −∞ by design
            assert bool(torch.isfinite(stage.tensor.float()).all()), place.key
        if stage.tensor.dim() == 2 and place.name not in ("embedding",):
            index = (min(3, stage.shape[0] - 1), min(1, stage.shape[1] - 1))
            assert explain(trace, place, index).matches, place.key  # λ kept in float32, as D used it


@pytest.mark.parametrize("absorbed", [False, True])
def test_mla_with_every_modifier_reads_by_tiles_as_it_computes_whole(absorbed: bool) -> None:
    request = sentence(" ".join(f"w{i}" for i in range(70)), variant="mla", heads=2, dim=8, mask="causal",
                       dtype="float64", softcap=1.5, qk_norm="rms", gate=True, absorbed=absorbed)
    whole, tiles = compute(request, lazy=False), compute(request, lazy=True)
    assert whole.names() == tiles.names() and tiles.stages[tiles.stage("capped", head=1).place].lazy
    for place, stage in whole.stages.items():
        torch.testing.assert_close(tiles.stages[place].tensor, stage.tensor, atol=1e-12, rtol=0, msg=place.key)
    assert explain(tiles, tiles.stage("capped", head=1).place, (60, 30)).matches
