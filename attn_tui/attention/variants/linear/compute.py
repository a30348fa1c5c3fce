"""Linear attention as a recurrence: one d_k × d_v state, written once per token and read by each query.

    q, k = l2(q) / math.sqrt(d_k), l2(k)            # (L, d_k) each
    S, out = torch.zeros(d_k, d_v), torch.zeros(L, d_v)
    for t in range(L):
        S = α[t] * S; S = S + β[t] * torch.outer(k[t], v[t] - S.T @ k[t])   # gated delta (plain: S += k[t]ᵀv[t])
        out[t] = S.T @ q[t]

There is no softmax and no L × L matrix: the state is all a token leaves behind. Yet the
output is linear in V, so the recurrence equals out = A·V for one lower-triangular matrix A
(`implied`), which the trace computes separately in closed form (the chunked kernels' form):
A = tril(QKᵀ ⊙ Γ)·(I + diag(β)·stril(KKᵀ ⊙ Γ))⁻¹·diag(β), Γ[t, s] = α_(s+1)·…·α_t. The
output is recorded from the states and checked against A·V. α_t = exp(g_t), g_t and β_t are
computed from each token as Qwen3-Next computes them (its `Qwen3NextGatedDeltaNet`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from attn_tui.attention.variants.linear import Decay, Implied, L2Norm, StateReadout, StateUpdate, WriteStrength
from attn_tui.errors import ConfigError
from attn_tui.i18n import NP_, Msg
from attn_tui.trace import masks
from attn_tui.trace.geometry import LayerGeometry
from attn_tui.trace.ops import Operand, Place
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis
from attn_tui.trace.steps import Step, Steps

if TYPE_CHECKING:
    from attn_tui.attention.engine import Context

EPS = 1e-6  # the l2 norm's, as transformers' `l2norm` (and the FLA kernels) have it
DECAY_AXIS, BETA_AXIS = Axis(NP_("axis", "decay"), ("α",)), Axis(NP_("axis", "beta"), ("β",))
STATE_FORMULAS = {
    "plain": Msg("S_t = S_(t−1) + k̂_tᵀ·v_t: token t adds its key times its value (S_(−1) = 0)"),
    "gated-delta": Msg("S_t = α_t·S_(t−1) + β_t·k̂_tᵀ·(v_t − α_t·k̂_t·S_(t−1)): decay, then write the value's "
                       "difference from what the state already recalls for k̂_t"),
}
IMPLIED_FORMULAS = {
    "plain": Msg("A = tril(Q̂·K̂ᵀ): the matrix the plain recurrence equals (out = A·V), no softmax"),
    "gated-delta": Msg("A = tril(Q̂K̂ᵀ ⊙ Γ)·(I + diag(β)·stril(K̂K̂ᵀ ⊙ Γ))⁻¹·diag(β), Γ[t,s] = α_(s+1)⋯α_t: "
                       "the matrix the recurrence equals (out = A·V)"),
}


def l2_rows(x: torch.Tensor) -> torch.Tensor:
    """Each row divided by its length (transformers' `l2norm`, eps inside the root)."""
    return x * torch.rsqrt((x * x).sum(-1, keepdim=True) + EPS)


def gates(x: torch.Tensor, w_a: torch.Tensor, w_b: torch.Tensor, a_log: torch.Tensor, dt_bias: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """(g, β), each (L,): g_t = −exp(A_log)·softplus(x_t·w_a + dt_bias) ≤ 0 (so α_t = exp(g_t) ≤ 1) and
    β_t = σ(x_t·w_b), for one head from its rows w_a, w_b (d,) of the model's `in_proj_ba`."""
    x32 = x.float() if x.dtype != torch.float64 else x
    g = -a_log.to(x32).exp() * F.softplus(x32 @ w_a.to(x32) + dt_bias.to(x32))  # (L,)
    beta = torch.sigmoid(x32 @ w_b.to(x32))  # (L,)
    return g, beta


def recurrence(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor | None,
               beta: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(states (L, d_k, d_v), out (L, d_v)) token by token; g and β None: the plain rule."""
    n, d_k, d_v = q.shape[0], q.shape[1], v.shape[1]
    state = torch.zeros(d_k, d_v, dtype=v.dtype, device=v.device)
    states, out = [], []
    for t in range(n):
        if g is None or beta is None:
            state = state + torch.outer(k[t], v[t])
        else:
            state = state * g[t].exp()
            recalled = state.T @ k[t]  # (d_v,): what the state returns for this key now
            state = state + torch.outer(k[t], (v[t] - recalled) * beta[t])
        states.append(state)
        out.append(state.T @ q[t])  # (d_v,)
    return torch.stack(states), torch.stack(out)


def implied_matrix(q: torch.Tensor, k: torch.Tensor, g: torch.Tensor | None, beta: torch.Tensor | None
                   ) -> torch.Tensor:
    """The lower-triangular (L, L) A with recurrence(q, k, v)'s output = A·v for every v, in closed form."""
    n = q.shape[0]
    lower = torch.ones(n, n, dtype=torch.bool, device=q.device).tril()  # (L, L): s ≤ t
    if g is None or beta is None:
        return (q @ k.T).masked_fill(~lower, 0)
    total = g.cumsum(0)  # G_t = g_0 + … + g_t
    gamma = torch.where(lower, (total[:, None] - total[None, :]).masked_fill(~lower, 0).exp(), 0)  # Γ[t, s]
    strict = (k @ k.T) * gamma * beta[:, None]  # (L, L): row t scaled by β_t …
    system = torch.eye(n, dtype=q.dtype, device=q.device) + strict.tril(-1)  # … strictly below the diagonal
    written = torch.linalg.solve_triangular(system, torch.diag(beta), upper=False)  # (L, L): W = this · V
    implied: torch.Tensor = ((q @ k.T) * gamma) @ written
    return implied


def run(ctx: Context, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> None:
    s = ctx.settings
    if q.shape[0] != k.shape[0]:
        raise ConfigError(Msg("linear attention reads its tokens in order, one query per key: {q} queries and "
                              "{k} keys", q=q.shape[0], k=k.shape[0]))
    if s.mask not in ("none", "causal") or (ctx.tail.mask is not None and s.mask != "causal"):
        raise ConfigError(Msg("linear attention is causal by its recurrence: --mask {mask} does not apply (none "
                              "or causal)", mask=s.mask))
    if s.temperature != 1:
        raise ConfigError(Msg("--temperature does not apply to linear attention: it has no softmax to temper"))
    trace = ctx.trace
    gated = s.value("rule") == "gated-delta"
    dtype = masks.softmax_dtype(q.dtype)
    factor = 1 / math.sqrt(q.shape[1])
    trace.geometry[0] = LayerGeometry("causal", None, ctx.positions, factor)
    q_hat, k_hat = record_normed(trace, Place("query"), Place("key"), q.to(dtype), k.to(dtype), ctx.qk_axes,
                                 factor)
    decay = beta_place = None
    g = beta = None
    if gated:
        source: Operand = ctx.source if isinstance(ctx.source, Place) or ctx.source in trace.inputs else Place("key")
        x = trace.operand(source)  # (L, d): the token's vector, or its key row where Q, K, V were typed
        d = x.shape[1]
        w_a, w_b = ctx.params.weight("w_a", 1, d), ctx.params.weight("w_b", 1, d)  # (1, d) each
        a_log, dt_bias = ctx.params.normal("A_log", 1, std=0.5), ctx.params.normal("dt_bias", 1, std=0.5)
        g, beta = gates(x, w_a[0], w_b[0], a_log[0], dt_bias[0])
        decay, beta_place = record_gates(trace, Place("decay"), g.to(dtype), beta.to(dtype), ctx.query_axis,
                                         Decay(source, "w_a", "A_log", "dt_bias"), WriteStrength(source, "w_b"))
    record_state(trace, Place("state"), q_hat, k_hat, v.to(dtype), g, beta, Place("value"), decay, beta_place,
                 ctx.query_axis, s.value("rule"))
    trace.step_axis = token_steps(ctx.query_axis.labels)


def token_steps(tokens: tuple[str, ...]) -> Steps:
    """Step t writes token t into the state (and makes key t readable): kind "state", not a generated token."""
    return Steps("state", tuple(Step(t, "state", Msg("token {t}: {token}", t=t, token=repr(token)), (token,))
                               for t, token in enumerate(tokens)))


def record_normed(trace: Trace, q_at: Place, k_at: Place, q: torch.Tensor, k: torch.Tensor, axes: tuple[Axis, Axis],
                  factor: float) -> tuple[torch.Tensor, torch.Tensor]:
    """query_l2 (unit rows times 1/√d_k) and key_l2 (unit rows), beside `q_at` and `k_at`."""
    dims = dim_axis(q.shape[1])
    q_hat = trace.add(Stage(q_at.at("query_l2"), l2_rows(q) * factor,
                            Msg("q̂_t = q_t / ‖q_t‖ · 1/√d_k   (d_k = {d})", d=q.shape[1]), (axes[0], dims),
                            L2Norm(q_at, EPS, factor)))
    k_hat = trace.add(Stage(k_at.at("key_l2"), l2_rows(k), Msg("k̂_t = k_t / ‖k_t‖: every key of length 1"),
                            (axes[1], dims), L2Norm(k_at, EPS)))
    return q_hat, k_hat


def record_gates(trace: Trace, at: Place, g: torch.Tensor, beta: torch.Tensor, axis: Axis, decay_op: Decay,
                 beta_op: WriteStrength) -> tuple[Place, Place]:
    """decay α_t = exp(g_t) and beta β_t, one number a token each, at `at` (its name is replaced)."""
    trace.add(Stage(at.at("decay"), g.exp()[:, None],
                    Msg("α_t = exp(g_t), g_t = −exp(A_log)·softplus(x_t·w_a + dt_bias): the share of the state "
                        "kept"), (axis, DECAY_AXIS), decay_op))
    trace.add(Stage(at.at("beta"), beta[:, None], Msg("β_t = σ(x_t·w_b): how strongly token t writes its value"),
                    (axis, BETA_AXIS), beta_op))
    return at.at("decay"), at.at("beta")


def record_state(trace: Trace, at: Place, q_hat: torch.Tensor, k_hat: torch.Tensor, v: torch.Tensor,
                 g: torch.Tensor | None, beta: torch.Tensor | None, value: Place, decay: Place | None,
                 beta_place: Place | None, axis: Axis, rule: str) -> torch.Tensor:
    """Each step's state, the implied matrix and the output (from the states); returns the output (L, d_v).

    The output is also A·V; where the two ways differ by more than rounding, the trace says so."""
    states, out = recurrence(q_hat, k_hat, v, g, beta)  # (L, d_k, d_v), (L, d_v)
    key_dims = dim_axis(k_hat.shape[1], NP_("axis", "key dim"), "k")
    value_dims = dim_axis(v.shape[1], NP_("axis", "value dim"), "v")
    q_at, k_at = at.at("query_l2"), at.at("key_l2")
    placed: list[Place] = []
    for t in range(states.shape[0]):
        here = Place("state", at.layer, at.head, t, at.module)
        trace.add(Stage(here, states[t], STATE_FORMULAS[rule], (key_dims, value_dims),
                        StateUpdate(placed[-1] if placed else None, k_at, value, t, decay, beta_place)))
        placed.append(here)
    implied = implied_matrix(q_hat, k_hat, g, beta)  # (L, L)
    trace.add(Stage(at.at("implied"), implied, IMPLIED_FORMULAS[rule], (axis, Axis("key", axis.labels)),
                    Implied(q_at, k_at, decay, beta_place)))
    trace.add(Stage(at.at("output"), out, Msg("o_t = q̂_t·S_t: each query reads the state its token left; "
                                              "equal to A·V"), (axis, dim_axis(v.shape[1])),
                    StateReadout(q_at, tuple(placed), at.at("implied"), value)))
    gap = float((implied @ v - out).abs().max()) if out.numel() else 0.0
    if gap > 1e-4 * max(1.0, float(out.abs().max())):
        trace.warn(Msg("the state's output and A·V differ by {gap} (rounding of {dtype})", gap=f"{gap:.2g}",
                       dtype=str(out.dtype).replace("torch.", "")))
    return out
