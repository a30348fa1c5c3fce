"""How each stage was made, as plain data: the inspector explains any cell from these, once for every source.

A source records, beside each tensor, the operation that produced it and where its
operands live (other stages by place, parameters by name). `attn_tui.explain` then writes
out the arithmetic of any cell for every variant, real model, trained model and recorded
piece of user code alike, and recomputes it to show that it matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from attn_tui.i18n import Msg

if TYPE_CHECKING:
    from attn_tui.trace.masks import MaskSpec


@dataclass(frozen=True, order=True)
class Place:
    """Where a stage sits, TransformerLens-style: (layer, head, step, name, module).

    `layer` is a transformer block, `head` an attention head, `step` a decoder step or
    a flash tile, `module` which attention of a block it is when a block has several
    (an encoder-decoder's `self_attn` and `cross_attn`, a recorded module's name); each is
    None where the source has no such axis.
    """

    name: str
    layer: int | None = None
    head: int | None = None
    step: int | None = None
    module: str | None = None

    @property
    def key(self) -> str:
        """`weights`, `weights@h1`, `blocks.2.attn.weights@h5`, `blocks.0.cross_attn.weights@h1@t3`, `enc.weights`:
        unique within a trace."""
        if self.layer is not None:
            key = f"blocks.{self.layer}.{self.module or 'attn'}.{self.name}"
        else:
            key = self.name if self.module is None else f"{self.module}.{self.name}"
        key += "" if self.head is None else f"@h{self.head}"
        return key + ("" if self.step is None else f"@t{self.step}")

    def at(self, name: str) -> Place:
        """The stage called `name` at the same layer, head, step and module."""
        return Place(name, self.layer, self.head, self.step, self.module)


Operand = Union[Place, str]  # a stage, or the name of an input ("X") of the trace


@dataclass(frozen=True)
class Given:
    """Typed, or computed by a network that is not attention: the value is shown as it is."""

    what: str | Msg


@dataclass(frozen=True)
class Lookup:
    """Row `rows[i]` of the embedding table `table` (a parameter), one per token."""

    table: str
    rows: tuple[int, ...]


@dataclass(frozen=True)
class Sinusoid:
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(…)."""

    base: float = 10000.0


@dataclass(frozen=True)
class Sum:
    """Cell-wise sum of stages of the same shape (embedding + PE, scores + bias)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Linear:
    """out[i, j] = Σ_m source[i, m]·weight[offset + j, m] (+ bias[offset + j]): a row of X·Wᵀ + b.

    `offset` picks a head's rows of a fused or stacked weight.
    """

    source: Operand
    weight: str
    bias: str | None = None
    offset: int = 0


@dataclass(frozen=True)
class Identity:
    """out[i, j] = source[i, j]: the identity projection (Q = K = V = X), as a first attention lesson has it."""

    source: Operand


@dataclass(frozen=True)
class Columns:
    """out[i, j] = source[i, offset + j]: a head's slice of a fused projection (or of a typed input)."""

    source: Operand
    offset: int


@dataclass(frozen=True)
class Dot:
    """out[i, j] = Σ_m left[i, m]·right[j, m]: every query against every key."""

    left: Place
    right: Place


@dataclass(frozen=True)
class Scale:
    """out = source · factor (1/√d_k, or a model's own scaling)."""

    source: Place
    factor: float
    reason: str


@dataclass(frozen=True)
class Masking:
    """out[i, j] = source[i, j] / temperature where the mask allows, the fill where it does not."""

    source: Place
    mask: MaskSpec | None
    fill: str
    temperature: float = 1.0


@dataclass(frozen=True)
class Softmax:
    """Softmax of each row of `source` over the keys (a learned sink logit joins it when `sink` is named).

    The sink is entry `sink_index` of the parameter `sink` (one logit per head): it takes
    its share of each row's softmax and is then dropped, so the row sums to 1 − that share.
    """

    source: Place
    sink: str | None = None
    sink_index: int = 0


@dataclass(frozen=True)
class WeightedSum:
    """out[i, j] = Σ_k weights[i, k]·values[k, j]."""

    weights: Place
    values: Place


@dataclass(frozen=True)
class TanhOfSum:
    """out[i, j, h] = tanh(left[i, h] + right[j, h]): Bahdanau's energy from separate projections."""

    left: Place
    right: Place


@dataclass(frozen=True)
class TanhOfPair:
    """out[i, j, h] = tanh(Σ_m weight[h, m]·[query_i; key_j][m] (+ bias[h])): the concat form's energy."""

    query: Place
    key: Place
    weight: str
    bias: str | None = None  # a recorded nn.Linear's bias


@dataclass(frozen=True)
class Reduce:
    """out[i, j] = Σ_h vector[h]·source[i, j, h] (+ bias): a learned vector turns an energy into a score."""

    source: Place
    vector: str
    bias: str | None = None  # a recorded nn.Linear(hidden, 1)'s bias (Bahdanau's `Va`)


@dataclass(frozen=True)
class Concat:
    """The parts side by side along their last axis (the heads' outputs)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Stack:
    """Row t is row 0 of part t: one decoder step's weights per row (an alignment)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Mean:
    """Cell-wise mean of stages of the same shape (an alignment averaged over heads)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Rotary:
    """Row p of `source` with each pair of dimensions (i, i + d/2) turned by the angle p·θ_i, θ_i = base^(−2i/d).

    Llama's rotate-half convention, as transformers' `apply_rotary_pos_emb` has it:
    out[p, i] = x_i cos − x_{i+d/2} sin, out[p, i + d/2] = x_{i+d/2} cos + x_i sin.
    `scaling` multiplies cos and sin (a model's attention_scaling; 1 for plain RoPE).
    """

    source: Place
    base: float
    scaling: float = 1.0
    first: int = 0  # the position of row 0 (a generated token's query row sits at P + t − 1, not at 0)


@dataclass(frozen=True)
class HeadNorm:
    """Row p of `source` normalised over a head's dimensions, then scaled (and shifted) per dimension.

    rms: out[p, j] = x_j / √(mean_m x_m² + eps) · (offset + weight[j]);
    layer: out[p, j] = (x_j − mean) / √(var + eps) · (offset + weight[j]) + bias[j].
    `offset` is 1 where a model stores its weight as (1 + w) (Gemma), else 0.
    Where the model norms the whole projection before splitting it into heads (OLMo-2), `whole`
    names the stages whose rows, side by side, make that projection's row (every head's, in order):
    the mean runs over all of them, and `column` is where `source`'s dimensions start in it (and in
    the weight).
    """

    source: Place
    kind: str  # rms | layer
    weight: str
    eps: float
    bias: str | None = None
    offset: float = 0.0
    whole: tuple[Place, ...] = ()  # empty: the mean runs over source's own row (one head)
    column: int = 0


@dataclass(frozen=True)
class PartialRotary:
    """Rotary on the first `rotated` dimensions of `source`'s rows (the rest pass through), pairs as
    rotate-half (i, i + r/2) or interleaved (2i, 2i + 1); θ_i = base^(−2i/r), the angle p·θ_i."""

    source: Place
    base: float
    rotated: int
    interleaved: bool = False
    scaling: float = 1.0
    first: int = 0  # the position of row 0
    inv_freq: str | None = None  # a parameter holding the model's own θ_i (rope scaling: YaRN); None: base^(−2i/r)


@dataclass(frozen=True)
class SoftCap:
    """out = cap · tanh(source / cap): a score kept inside (−cap, cap) (Gemma 2's logit soft cap)."""

    source: Place
    cap: float


@dataclass(frozen=True)
class SigmoidGate:
    """out[i, j] = σ(Σ_m source[i, m]·weight[offset + j, m]): the output gate of gated attention, one number in
    (0, 1) for each query row and each dimension of a head (`offset` picks the head's rows of W_g)."""

    source: Operand
    weight: str
    offset: int = 0


@dataclass(frozen=True)
class GateProduct:
    """out[i, j] = output[i, j]·gate[i, j]: a head's weighted sum let through by its gate, element by element."""

    output: Place
    gate: Place


@dataclass(frozen=True)
class DistanceBias:
    """out[i, j] = −m·|i − j|, m = entry `index` of the parameter `slopes`: ALiBi's linear distance bias."""

    slopes: str
    index: int


@dataclass(frozen=True)
class SinkMass:
    """out[i, 0] = exp(s − max) / (Σ_k exp(source[i, k] − max) + exp(s − max)): the share the sink logit took.

    s is entry `index` of the parameter `sink`; max is the largest of the row and s.
    """

    source: Place
    sink: str
    index: int


@dataclass(frozen=True)
class MovedNorm:
    """out[i, j] = ‖A[i, j] · v_j · W_Oᵀ[column : column + d_h]‖: how much key j moves query i's output through this
    head after the output projection (Kobayashi et al. 2020). `weights` and `value` are the head's stages, `w_o` the
    parameter (d, heads·d_h) in nn.Linear's layout, `column` the head's first column in it."""

    weights: Place
    value: Place
    w_o: str
    column: int


@dataclass(frozen=True)
class TileScores:
    """out[i, c] = (q_i·k_{offset+c})·factor / T where `mask` (the tile's part) allows, the fill where not."""

    query: Place
    key: Place
    offset: int
    factor: float
    mask: MaskSpec | None
    fill: str
    temperature: float = 1.0


@dataclass(frozen=True)
class RunningMax:
    """out[i, 0] = max(previous[i, 0], max_c tile[i, c]): the largest score seen so far (−∞ before the first)."""

    tile: Place
    previous: Place | None


@dataclass(frozen=True)
class Rescale:
    """out[i, 0] = exp(previous[i, 0] − current[i, 0]): how much the sums so far shrink (0 before the first)."""

    current: Place
    previous: Place | None


@dataclass(frozen=True)
class Denominator:
    """out[i, 0] = α[i]·previous[i, 0] + Σ_c exp(tile[i, c] − m[i]): the running softmax denominator l."""

    tile: Place
    max: Place
    rescale: Place
    previous: Place | None


@dataclass(frozen=True)
class Accumulate:
    """out[i, j] = α[i]·previous[i, j] + Σ_c exp(tile[i, c] − m[i])·values[offset + c, j]: the unnormalised output."""

    tile: Place
    max: Place
    rescale: Place
    previous: Place | None
    values: Place
    offset: int


@dataclass(frozen=True)
class Normalise:
    """out[i, j] = accumulator[i, j] / denominator[i, 0]; 0 where the denominator is 0 (nothing to attend)."""

    accumulator: Place
    denominator: Place


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
class ScoreMod:
    """out[q, kv] = score_mod(source[q, kv], b, h, q, kv): flex_attention's user function, run on every score.

    The function is the user's code, so it is never called here: it ran where the code ran,
    and this stage holds what it returned. `function` names it, `where` gives its file and line.
    """

    source: Place
    function: str
    where: str
    batch: int
    head: int


@dataclass(frozen=True)
class BlockTiles:
    """A flex_attention BlockMask as a tile map: out[qb, kb] = 0 (skipped), 1 (partial: mask_mod applied per cell)
    or 2 (full: computed without the mask_mod), for tiles of `block` = (query rows, key columns)."""

    block: tuple[int, int]
    shape: tuple[int, int]  # (L, S) the scores the tiles cover
    mask_mod: str  # the mask_mod's name and place, as the partial tiles apply it


@dataclass(frozen=True)
class VocabCut:
    """The sampler's top-k / top-p cut, as transformers' warpers make it: out[0, j] = source[0, j] for a token
    they keep, −∞ for one they drop. `ranks[j]` is column j's rank in the whole vocabulary (0 = likeliest) and
    `before[j]` the probability of every token ranked above it (what top-p compares with P)."""

    source: Place
    top_k: int  # 0: no top-k
    top_p: float  # 1: no top-p
    ranks: tuple[int, ...]
    before: tuple[float, ...]


@dataclass(frozen=True)
class VocabSoftmax:
    """out[0, j] = exp(source[0, j] − log Σ_v exp(source[0, v])): a probability over the whole vocabulary, of
    which a stage shows a few columns; `log_total` is that log-sum over all `vocab` tokens."""

    source: Place
    log_total: float
    vocab: int


@dataclass(frozen=True)
class Chosen:
    """out[0, j] = 1 for the token written, 0 elsewhere: the largest probability (greedy), or drawn from
    `source`'s probabilities by a generator seeded with `seed`."""

    source: Place
    column: int
    drawn: bool
    seed: int = 0


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
class Written:
    """out[r, j] = row `rows[r][1]` of stage `rows[r][0]` at key j (0 right of the keys that row read): the
    weights rows a model wrote so far, one under the other, each from its own step."""

    rows: tuple[tuple[Place, int], ...]


Op = Union[Given, Lookup, Sinusoid, Sum, Linear, Identity, Columns, Dot, Scale, Masking, Softmax, WeightedSum,
           TanhOfSum, TanhOfPair, Reduce, Concat, Stack, Rotary, DistanceBias, SinkMass, TileScores, RunningMax,
           Rescale, Denominator, Accumulate, Normalise, Mean, HeadNorm, PartialRotary, SoftCap, ScoreMod, BlockTiles,
           VocabCut, VocabSoftmax, Chosen, DotSum, Absorb, LambdaTerms, DiffWeights, DiffNorm, L2Norm, Decay,
           WriteStrength, StateUpdate, Implied, StateReadout, SigmoidGate, GateProduct, GatedNorm, CausalConv,
           MovedNorm, Written]
