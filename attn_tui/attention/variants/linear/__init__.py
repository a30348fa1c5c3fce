"""Linear attention as a recurrence: one d_k × d_v state, written once per token, read by each query.

The declaration: everything the front ends read before torch loads. The math is `compute.py`;
the inspector's arithmetic of its own ops is `explain.py`."""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.ask.option import choice
from attn_tui.ask.variant import Sizes, Variant
from attn_tui.i18n import N_, NP_
from attn_tui.trace.op import Op
from attn_tui.trace.place import Operand, Place
from attn_tui.trace.stage_kind import StageKind


@dataclass(frozen=True)
class L2Norm(Op):
    """out[i, j] = source[i, j] / √(Σ_m source[i, m]² + eps) · scale: each row made unit length (then scaled)."""

    source: Place
    eps: float
    scale: float = 1.0


@dataclass(frozen=True)
class Decay(Op):
    """out[t, 0] = α_t = exp(g_t), g_t = −exp(a_log[index])·softplus(Σ_m source[t, m]·weight[index, m] +
    dt_bias[index]): how much of the recurrent state step t keeps (Qwen3-Next's gated delta rule)."""

    source: Operand
    weight: str
    a_log: str
    dt_bias: str
    index: int = 0


@dataclass(frozen=True)
class WriteStrength(Op):
    """out[t, 0] = β_t = σ(Σ_m source[t, m]·weight[index, m]): how strongly step t writes its value into the state."""

    source: Operand
    weight: str
    index: int = 0


@dataclass(frozen=True)
class StateUpdate(Op):
    """Row `row`'s write into the recurrent state S (d_k × d_v), from `previous` (None: S_(t−1) = 0).

    plain (no `decay`): out[a, b] = S_(t−1)[a, b] + k_t[a]·v_t[b];
    gated delta: out[a, b] = α_t·S_(t−1)[a, b] + k_t[a]·β_t·(v_t[b] − α_t·Σ_m S_(t−1)[m, b]·k_t[m]).
    """

    previous: Place | None
    key: Place
    value: Place
    row: int
    decay: Place | None = None
    beta: Place | None = None


@dataclass(frozen=True)
class Implied(Op):
    """out[t, s] = q_t·u_(t,s) for s ≤ t, 0 above: the attention-like matrix a linear recurrence equals.

    u_(s,s) = β_s·k_s and u_(r,s) = α_r·(u_(r−1,s) − β_r·k_r·(k_r·u_(r−1,s))) for r = s+1 … t (the
    gated delta rule); plain: u_(t,s) = k_s. Then out · V is the recurrence's output.
    """

    query: Place
    key: Place
    decay: Place | None = None
    beta: Place | None = None


@dataclass(frozen=True)
class StateReadout(Op):
    """out[t, j] = Σ_a query[t, a]·states[t][a, j], which equals Σ_s implied[t, s]·value[s, j]."""

    query: Place
    states: tuple[Place, ...]
    implied: Place
    value: Place


KINDS = (
    StageKind("query_l2", "q̂", NP_("stage", "query_l2"), N_(
        "Each query divided by its length, then by √d_k. Linear attention has no softmax to tame large "
        "scores, so the queries and keys are kept at a fixed length instead.")),
    StageKind("key_l2", "k̂", NP_("stage", "key_l2"), N_(
        "Each key divided by its length: a key of length 1 makes the delta rule's write an exact replacement "
        "of what the state held for that key when β is 1.")),
    StageKind("decay", "α", NP_("stage", "decay"), N_(
        "How much of the state each token keeps before it writes: α_t = exp(g_t), between 0 and 1, computed "
        "from the token. A small α forgets the past quickly, like a short window."), colour_scale="sequential"),
    StageKind("beta", "β", NP_("stage", "beta"), N_(
        "How strongly each token writes into the state, σ(x_t·w_b). The delta rule replaces a share β of what "
        "the state recalls for the token's key by the token's value, instead of piling values up."),
        colour_scale="sequential"),
    StageKind("state", "S_t", NP_("stage", "state"), N_(
        "Everything the layer remembers after token t: one d_k × d_v matrix, the same size at every step. A "
        "query reads it as q·S_t; the state replaces the whole cache of keys and values of softmax attention.")),
    StageKind("implied", "A", NP_("stage", "implied"), N_(
        "The matrix the recurrence equals: the output is exactly this times V. It is lower-triangular (no "
        "token sees the future) and, without a softmax, its rows need not sum to 1 and can be negative.")),
)


RULE_NAMES = ("gated-delta", "plain")  # how each token writes the state (Qwen3-Next's, or a plain sum)
RULE = choice("rule", RULE_NAMES, NP_("setting", "rule"),
              N_("linear: how each token writes the state: gated-delta (decay α_t, then a delta-rule write of "
                 "strength β_t, as Qwen3-Next; the default) or plain (S_t = S_(t−1) + k_tᵀv_t)"))


def _footprint(z: Sizes) -> dict[str, int]:
    """A state (d_k × d_v) per step, the implied matrix, the normed q and k, decay and β, the output."""
    return {"parameters": 2 * z.d_q + 2, "states": z.queries * z.d_k * z.d_v, "implied": z.queries * z.keys,
            "normed q and k": 2 * z.queries * z.d_k, "decay and beta": 2 * z.queries, "output": z.queries * z.d_v}


VARIANT = Variant(
    name="linear", title="Linear attention (recurrent state)", order=140,
    stages=("query", "key", "value", "query_l2", "key_l2", "decay", "beta", "state", "implied", "output"),
    footprint=_footprint, own=(RULE,), lazy=False, score_based=False,
    unscored=N_("{option} does not apply to linear: it has no scores q·k, and its implied matrix is not a softmax"),
    more_stages=lambda z: z.queries - 1,  # one state a token
    explains={
        "output": N_(
        "Each query reads the state its own token left: o_t = q̂_t·S_t. No softmax and no score matrix were "
        "computed, yet the same numbers come out of the implied matrix times V, which the inspector shows."),
    },
)
