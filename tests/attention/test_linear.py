"""The `linear` variant against the Gated DeltaNet paper's formula in float64, against transformers' own kernels,
and its two ways to the output (the state, the implied matrix) against each other."""

from __future__ import annotations

import itertools
import json
import math

import pytest
import torch

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.cli import main
from attn_tui.errors import ConfigError
from attn_tui.explain.cell import explain
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Trace
from tests.conftest import matrices, sentence, x_matrix

TEXT = "나는 어제 친구와 함께 학교에 갔다"
REQUESTS = {
    "gated_sentence": sentence(TEXT, variant="linear"),
    "plain_sentence": sentence("the cat sat on the mat", variant="linear", rule="plain", mask="causal"),
    "gated_typed": matrices([[1, 0, 2], [0, 1, 0], [1, 1, 1], [-1, 2, 0]], [[1, 0, 0], [0, 1, 1], [2, 1, 0],
                            [0, 0, 1]], [[1, 2], [3, 4], [5, 6], [7, 8]], variant="linear", dtype="float64"),
    "gated_x_positional": x_matrix([[1, 0, 0, 1], [0, 1, 1, 0], [1, 1, 0, 0], [0, 0, 2, 1], [1, -1, 0, 1]],
                                   variant="linear", positional=True, seed=3),
}


def paper_reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, alpha: torch.Tensor | None,
                    beta: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """Yang, Kautz & Hatamizadeh (2024), Gated Delta Networks, eq. (10), in float64 loops, state d_k × d_v:
    S_t = α_t·(I − β_t k_t k_tᵀ)·S_(t−1) + β_t k_t v_tᵀ, o_t = S_tᵀ q_t (the paper writes the transpose);
    α = β = None: linear attention's S_t = S_(t−1) + k_t v_tᵀ. Inputs already normalised."""
    q, k, v = q.double(), k.double(), v.double()
    d_k, d_v = k.shape[1], v.shape[1]
    state = torch.zeros(d_k, d_v, dtype=torch.float64)
    states, out = [], []
    for t in range(q.shape[0]):
        kt, vt = k[t][:, None], v[t][:, None]  # columns
        if alpha is None or beta is None:
            state = state + kt @ vt.T
        else:
            a, b = float(alpha[t]), float(beta[t])
            state = a * (torch.eye(d_k, dtype=torch.float64) - b * kt @ kt.T) @ state + b * kt @ vt.T
        states.append(state.clone())
        out.append(state.T @ q[t])
    return torch.stack(states), torch.stack(out)


def _inputs(trace: Trace, gated: bool) -> tuple[torch.Tensor, ...]:
    q, k, v = (trace.tensor(n).double() for n in ("query", "key", "value"))
    q_hat = q / (q.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt() / math.sqrt(q.shape[1])
    k_hat = k / (k.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt()
    if not gated:
        return q_hat, k_hat, v, None, None
    return q_hat, k_hat, v, trace.tensor("decay")[:, 0].double(), trace.tensor("beta")[:, 0].double()


@pytest.mark.parametrize("key", list(REQUESTS))
def test_states_and_output_equal_the_papers_formula_in_float64(key: str) -> None:
    trace = compute(REQUESTS[key])
    gated = trace.meta.settings.value("rule") == "gated-delta"  # type: ignore[attr-defined]
    q, k, v, alpha, beta = _inputs(trace, gated)
    assert torch.allclose(trace.tensor("query_l2").double(), q, atol=1e-6)
    assert torch.allclose(trace.tensor("key_l2").double(), k, atol=1e-6)
    states, out = paper_reference(q, k, v, alpha, beta)
    for t in range(len(states)):
        assert (trace.tensor("state", step=t).double() - states[t]).abs().max() <= 1e-5, t
    assert (trace.tensor("output").double() - out).abs().max() <= 1e-5
    # the implied matrix: the reference's output for one-hot values, one value column per token
    _, implied = paper_reference(q, k, torch.eye(len(q), dtype=torch.float64), alpha, beta)
    assert (trace.tensor("implied").double() - implied).abs().max() <= 1e-5
    assert torch.equal(trace.tensor("implied").triu(1), torch.zeros_like(trace.tensor("implied")))


@pytest.mark.parametrize("key", list(REQUESTS))
def test_the_output_is_the_same_both_ways(key: str) -> None:
    trace = compute(REQUESTS[key])
    both = trace.tensor("implied").double() @ trace.tensor("value").double()
    assert (both - trace.tensor("output").double()).abs().max() <= 1e-5
    assert not trace.warnings


@pytest.mark.slow
def test_the_gates_are_qwen3_nexts_and_the_output_equals_transformers_kernels() -> None:
    from transformers.models.qwen3_next.modeling_qwen3_next import (
        torch_chunk_gated_delta_rule,
        torch_recurrent_gated_delta_rule,
    )

    trace = compute(REQUESTS["gated_sentence"])
    x = trace.tensor("embedding").double()
    w_a, w_b = trace.params["w_a"][0].double(), trace.params["w_b"][0].double()
    a_log, dt_bias = float(trace.params["A_log"][0]), float(trace.params["dt_bias"][0])
    g = -math.exp(a_log) * torch.nn.functional.softplus(x @ w_a + dt_bias)
    assert torch.allclose(trace.tensor("decay")[:, 0].double(), g.exp(), atol=1e-6)
    assert torch.allclose(trace.tensor("beta")[:, 0].double(), torch.sigmoid(x @ w_b), atol=1e-6)
    q, k, v = (trace.tensor(n)[None, :, None] for n in ("query", "key", "value"))  # (1, L, 1 head, d)
    beta = trace.tensor("beta")[:, 0][None, :, None]
    for rule in (torch_recurrent_gated_delta_rule, torch_chunk_gated_delta_rule):
        out, _ = rule(q, k, v, g=g.float()[None, :, None], beta=beta, use_qk_l2norm_in_kernel=True)
        assert (out[0, :, 0] - trace.tensor("output")).abs().max() <= 1e-5, rule.__name__


@pytest.mark.parametrize("rule", ["gated-delta", "plain"])
def test_stage_names_follow_the_registry_and_step_by_token(rule: str) -> None:
    trace = compute(sentence("a b c d", variant="linear", rule=rule, dim=4))
    stages = [s for s in VARIANTS["linear"].stages if rule == "gated-delta" or s not in ("decay", "beta")]
    assert trace.names() == ["embedding", *stages]
    assert [p.step for p in trace.stages if p.name == "state"] == [0, 1, 2, 3]
    assert trace.step_axis is not None and [str(s.label) for s in trace.step_axis] == [
        "token 0: 'a'", "token 1: 'b'", "token 2: 'c'", "token 3: 'd'"]
    assert trace.stage("state", step=2).shape == (4, 4)  # (d_k, d_v)


@pytest.mark.parametrize("key", list(REQUESTS))
def test_every_cell_of_every_stage_is_recomputed(key: str) -> None:
    trace = compute(REQUESTS[key])
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert arithmetic.matches and arithmetic.lines and arithmetic.title, (stage.key, index, arithmetic)


def test_the_inspector_shows_the_delta_write_and_the_other_way_to_the_output() -> None:
    trace = compute(REQUESTS["gated_typed"])
    lines = "\n".join(explain(trace, Place("state", step=2), (1, 0)).lines)
    assert "α = " in lines and "β = " in lines and "recalls" in lines and "written" in lines
    lines = "\n".join(explain(trace, Place("implied"), (3, 1)).lines)
    assert "step 2" in lines and "step 3" in lines
    assert "came after" not in lines
    lines = "\n".join(explain(trace, Place("output"), (2, 1)).lines)
    assert "Σ_s A[2,s]·V[s,1]" in lines


@pytest.mark.parametrize("request_,fragment", [
    (matrices([[1, 0]], [[1, 0], [0, 1]], [[1], [2]], variant="linear"), "one query per key"),
    (sentence("a b <pad>", variant="linear", mask="padding"), "--mask padding does not apply"),
    (sentence("a b c", variant="linear", temperature=2.0), "no softmax"),
])
def test_what_linear_attention_cannot_do_is_refused_in_words(request_, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        compute(request_)


def test_the_command_line_lists_the_stages_and_the_json_has_a_step_per_token(capsys) -> None:
    assert main(["stages", "--text", "a b c", "--variant", "linear", "--rule", "plain", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"]["rule"] == "plain"
    assert [s["step"] for s in doc["stages"] if s["name"] == "state"] == [0, 1, 2]
    assert "decay" not in {s["name"] for s in doc["stages"]}
    assert main(["stages", "--text", "a b c", "--variant", "linear"]) == 0
    out = capsys.readouterr().out
    assert "implied" in out and "beta" in out
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--text", "a b", "--variant", "scaled_dot", "--rule", "plain"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "--rule does not apply to scaled_dot: it belongs to linear" in err
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--text", "a b", "--variant", "linear", "--rule", "softmax"])
    assert exit_.value.code == 2 and len(capsys.readouterr().err.strip().splitlines()) == 1
