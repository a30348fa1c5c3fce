"""The ops of the newer mechanisms (latent, differential, linear attention's state, Gated DeltaNet's norm and
convolution): plain data like the rest of `ops`, which names them in its `Op` union."""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.trace.place import Operand, Place


@dataclass(frozen=True)
class L2Norm:
    """out[i, j] = source[i, j] / √(Σ_m source[i, m]² + eps) · scale: each row made unit length (then scaled)."""

    source: Place
    eps: float
    scale: float = 1.0


@dataclass(frozen=True)
class Decay:
    """out[t, 0] = α_t = exp(g_t), g_t = −exp(a_log[index])·softplus(Σ_m source[t, m]·weight[index, m] +
    dt_bias[index]): how much of the recurrent state step t keeps (Qwen3-Next's gated delta rule)."""

    source: Operand
    weight: str
    a_log: str
    dt_bias: str
    index: int = 0


@dataclass(frozen=True)
class WriteStrength:
    """out[t, 0] = β_t = σ(Σ_m source[t, m]·weight[index, m]): how strongly step t writes its value into the state."""

    source: Operand
    weight: str
    index: int = 0


@dataclass(frozen=True)
class StateUpdate:
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
class Implied:
    """out[t, s] = q_t·u_(t,s) for s ≤ t, 0 above: the attention-like matrix a linear recurrence equals.

    u_(s,s) = β_s·k_s and u_(r,s) = α_r·(u_(r−1,s) − β_r·k_r·(k_r·u_(r−1,s))) for r = s+1 … t (the
    gated delta rule); plain: u_(t,s) = k_s. Then out · V is the recurrence's output.
    """

    query: Place
    key: Place
    decay: Place | None = None
    beta: Place | None = None


@dataclass(frozen=True)
class StateReadout:
    """out[t, j] = Σ_a query[t, a]·states[t][a, j], which equals Σ_s implied[t, s]·value[s, j]."""

    query: Place
    states: tuple[Place, ...]
    implied: Place
    value: Place


@dataclass(frozen=True)
class GatedNorm:
    """out[i, j] = source[i, j] / √(mean_m source[i, m]² + eps)·weight[j]·SiLU(gate[i, j]): Gated DeltaNet's
    norm of a head's output, opened by SiLU of the gate `gate` (an input of the trace, the layer's z)."""

    source: Place
    gate: str
    weight: str
    eps: float


@dataclass(frozen=True)
class CausalConv:
    """out[t, j] = SiLU(Σ_i weight[c, i]·source[t − K + 1 + i, c]), c = offset + j, rows before 0 read as 0: a short
    causal convolution over each channel of `source` (an input of the trace), as Gated DeltaNet runs on q, k, v."""

    source: str
    weight: str
    offset: int


@dataclass(frozen=True)
class DotSum:
    """out[i, j] = Σ_pairs Σ_m left[i, m]·right[j, m]: a score made of several dot products added, as multi-head
    latent attention's is (the no-position part of q and k, plus their rotary part)."""

    pairs: tuple[tuple[Place, Place], ...]


@dataclass(frozen=True)
class Absorb:
    """out[i, m] = Σ_c source[i, c]·weight[offset + c, m]: a query taken into a latent space through the rows of
    an up-projection (MLA's absorbed form: q·W_uk, so the scores meet the cached latent itself)."""

    source: Place
    weight: str
    offset: int


@dataclass(frozen=True)
class LambdaTerms:
    """Differential attention's λ as a row of its parts: out[0] = exp(λ_q1·λ_k1), out[1] = exp(λ_q2·λ_k2),
    out[2] = λ_init = 0.8 − 0.6·exp(−0.3·depth), out[3] = λ = out[0] − out[1] + out[2].

    The four vectors are parameters named `q1`, `k1`, `q2`, `k2`; `depth` is the layer's index from 0."""

    q1: str
    k1: str
    q2: str
    k2: str
    depth: int


@dataclass(frozen=True)
class DiffWeights:
    """out[i, j] = first[i, j] − λ·second[i, j], λ = lam[0, 3]: the difference of two softmax maps."""

    first: Place
    second: Place
    lam: Place


@dataclass(frozen=True)
class DiffNorm:
    """out[p, j] = (1 − λ_init)·x_j / √(mean_m x_m² + eps), λ_init = lam[0, 2]: the per-head RMSNorm of a
    differential head's output (no learned weight), scaled back by 1 − λ_init."""

    source: Place
    lam: Place
    eps: float


@dataclass(frozen=True)
class LatentKeyScale:
    """out[j, 0] = 1/√((‖latent[j]·weight[first:last]ᵀ‖² + copies·‖rot[j]‖²) / width + eps): the RMS factor of a
    key [ĉ_j·W_ukᵀ | k_rot,j] (one head's rows of W_uk, or every head's for a norm over the whole projection)
    found from the cached latent alone, ‖ĉ·W_ukᵀ‖² = ĉ·(W_ukᵀW_uk)·ĉ: MLA's absorbed form with a QK-norm."""

    latent: Place
    rot: Place
    weight: str
    first: int
    last: int
    copies: int  # how many times the shared rotary key sits in the normed row (1, or every head's)
    eps: float


@dataclass(frozen=True)
class NormedAbsorb:
    """out[i, c] = Σ_(m < width) source[i, m]·norm[column + m]·weight[offset + m, c]: a normed query's no-position
    part, times the key norm's weight, taken into the latent through W_uk (the key's weight moved to the query)."""

    source: Place
    norm: str
    column: int
    weight: str
    offset: int
    width: int


@dataclass(frozen=True)
class NormedLatentScore:
    """out[i, j] = scale[j, 0]·(Σ_c absorbed[i, c]·latent[j, c] + Σ_m source[i, d_nope + m]·norm[column + d_nope + m]
    ·rot[j, m]): a normed query against a normed key that was never built, from the latent and the rotary key."""

    absorbed: Place
    latent: Place
    source: Place
    norm: str
    column: int
    d_nope: int
    rot: Place
    scale: Place
