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
from attn_tui.trace.ops_modern import Absorb as Absorb
from attn_tui.trace.ops_modern import CausalConv as CausalConv
from attn_tui.trace.ops_modern import Decay as Decay
from attn_tui.trace.ops_modern import DiffNorm as DiffNorm
from attn_tui.trace.ops_modern import DiffWeights as DiffWeights
from attn_tui.trace.ops_modern import DotSum as DotSum
from attn_tui.trace.ops_modern import GatedNorm as GatedNorm
from attn_tui.trace.ops_modern import Implied as Implied
from attn_tui.trace.ops_modern import L2Norm as L2Norm
from attn_tui.trace.ops_modern import LambdaTerms as LambdaTerms
from attn_tui.trace.ops_modern import LatentKeyScale as LatentKeyScale
from attn_tui.trace.ops_modern import NormedAbsorb as NormedAbsorb
from attn_tui.trace.ops_modern import NormedLatentScore as NormedLatentScore
from attn_tui.trace.ops_modern import StateReadout as StateReadout
from attn_tui.trace.ops_modern import StateUpdate as StateUpdate
from attn_tui.trace.ops_modern import WriteStrength as WriteStrength
from attn_tui.trace.ops_writing import Chosen as Chosen
from attn_tui.trace.ops_writing import VocabCut as VocabCut
from attn_tui.trace.ops_writing import VocabSoftmax as VocabSoftmax
from attn_tui.trace.ops_writing import Written as Written
from attn_tui.trace.place import Operand as Operand
from attn_tui.trace.place import Place as Place

if TYPE_CHECKING:
    from attn_tui.trace.masks import MaskSpec


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
    bias: str | None = None  # a parameter b_g added before σ (Qwen3-Next with attention_bias); None: no bias


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


Op = Union[Given, Lookup, Sinusoid, Sum, Linear, Identity, Columns, Dot, Scale, Masking, Softmax, WeightedSum,
           TanhOfSum, TanhOfPair, Reduce, Concat, Stack, Rotary, DistanceBias, SinkMass, TileScores, RunningMax,
           Rescale, Denominator, Accumulate, Normalise, Mean, HeadNorm, PartialRotary, SoftCap, ScoreMod, BlockTiles,
           VocabCut, VocabSoftmax, Chosen, DotSum, Absorb, LambdaTerms, DiffWeights, DiffNorm, L2Norm, Decay,
           WriteStrength, StateUpdate, Implied, StateReadout, SigmoidGate, GateProduct, GatedNorm, CausalConv,
           MovedNorm, Written,
           LatentKeyScale, NormedAbsorb, NormedLatentScore]
