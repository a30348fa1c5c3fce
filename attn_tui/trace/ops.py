"""How each stage was made, as plain data: the inspector explains any cell from these, once for every source.

A source records, beside each tensor, the operation that produced it and where its
operands live (other stages by place, parameters by name). `attn_tui.explain` then writes
out the arithmetic of any cell for every variant, real model, trained model and recorded
piece of user code alike, and recomputes it to show that it matches.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from attn_tui.i18n import Msg
from attn_tui.trace.op import Op as Op
from attn_tui.trace.ops_writing import Chosen as Chosen
from attn_tui.trace.ops_writing import VocabCut as VocabCut
from attn_tui.trace.ops_writing import VocabSoftmax as VocabSoftmax
from attn_tui.trace.ops_writing import Written as Written
from attn_tui.trace.place import Operand as Operand
from attn_tui.trace.place import Place as Place

if TYPE_CHECKING:
    from attn_tui.trace.masks import MaskSpec


@dataclass(frozen=True)
class Given(Op):
    """Typed, or computed by a network that is not attention: the value is shown as it is."""

    what: str | Msg


@dataclass(frozen=True)
class Lookup(Op):
    """Row `rows[i]` of the embedding table `table` (a parameter), one per token."""

    table: str
    rows: tuple[int, ...]


@dataclass(frozen=True)
class Sinusoid(Op):
    """PE[pos, 2i] = sin(pos / base^(2i/d)), PE[pos, 2i+1] = cos(…)."""

    base: float = 10000.0


@dataclass(frozen=True)
class Sum(Op):
    """Cell-wise sum of stages of the same shape (embedding + PE, scores + bias)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Linear(Op):
    """out[i, j] = Σ_m source[i, m]·weight[offset + j, m] (+ bias[offset + j]): a row of X·Wᵀ + b.

    `offset` picks a head's rows of a fused or stacked weight.
    """

    source: Operand
    weight: str
    bias: str | None = None
    offset: int = 0


@dataclass(frozen=True)
class Identity(Op):
    """out[i, j] = source[i, j]: the identity projection (Q = K = V = X), as a first attention lesson has it."""

    source: Operand


@dataclass(frozen=True)
class Columns(Op):
    """out[i, j] = source[i, offset + j]: a head's slice of a fused projection (or of a typed input)."""

    source: Operand
    offset: int


@dataclass(frozen=True)
class Dot(Op):
    """out[i, j] = Σ_m left[i, m]·right[j, m]: every query against every key."""

    left: Place
    right: Place


@dataclass(frozen=True)
class Scale(Op):
    """out = source · factor (1/√d_k, or a model's own scaling)."""

    source: Place
    factor: float
    reason: str


@dataclass(frozen=True)
class Masking(Op):
    """out[i, j] = source[i, j] / temperature where the mask allows, the fill where it does not."""

    masks: ClassVar[bool] = True

    source: Place
    mask: MaskSpec | None
    fill: str
    temperature: float = 1.0


@dataclass(frozen=True)
class Softmax(Op):
    """Softmax of each row of `source` over the keys (a learned sink logit joins it when `sink` is named).

    The sink is entry `sink_index` of the parameter `sink` (one logit per head): it takes
    its share of each row's softmax and is then dropped, so the row sums to 1 − that share.
    """

    source: Place
    sink: str | None = None
    sink_index: int = 0


@dataclass(frozen=True)
class WeightedSum(Op):
    """out[i, j] = Σ_k weights[i, k]·values[k, j]."""

    weights: Place
    values: Place


@dataclass(frozen=True)
class TanhOfSum(Op):
    """out[i, j, h] = tanh(left[i, h] + right[j, h]): Bahdanau's energy from separate projections."""

    left: Place
    right: Place


@dataclass(frozen=True)
class TanhOfPair(Op):
    """out[i, j, h] = tanh(Σ_m weight[h, m]·[query_i; key_j][m] (+ bias[h])): the concat form's energy."""

    query: Place
    key: Place
    weight: str
    bias: str | None = None  # a recorded nn.Linear's bias


@dataclass(frozen=True)
class Reduce(Op):
    """out[i, j] = Σ_h vector[h]·source[i, j, h] (+ bias): a learned vector turns an energy into a score."""

    source: Place
    vector: str
    bias: str | None = None  # a recorded nn.Linear(hidden, 1)'s bias (Bahdanau's `Va`)


@dataclass(frozen=True)
class Concat(Op):
    """The parts side by side along their last axis (the heads' outputs)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Stack(Op):
    """Row t is row 0 of part t: one decoder step's weights per row (an alignment)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Mean(Op):
    """Cell-wise mean of stages of the same shape (an alignment averaged over heads)."""

    parts: tuple[Place, ...]


@dataclass(frozen=True)
class Rotary(Op):
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
class HeadNorm(Op):
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
class PartialRotary(Op):
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
class SoftCap(Op):
    """out = cap · tanh(source / cap): a score kept inside (−cap, cap) (Gemma 2's logit soft cap)."""

    source: Place
    cap: float


@dataclass(frozen=True)
class SigmoidGate(Op):
    """out[i, j] = σ(Σ_m source[i, m]·weight[offset + j, m]): the output gate of gated attention, one number in
    (0, 1) for each query row and each dimension of a head (`offset` picks the head's rows of W_g)."""

    source: Operand
    weight: str
    offset: int = 0
    bias: str | None = None  # a parameter b_g added before σ (Qwen3-Next with attention_bias); None: no bias


@dataclass(frozen=True)
class GateProduct(Op):
    """out[i, j] = output[i, j]·gate[i, j]: a head's weighted sum let through by its gate, element by element."""

    output: Place
    gate: Place


@dataclass(frozen=True)
class SinkMass(Op):
    """out[i, 0] = exp(s − max) / (Σ_k exp(source[i, k] − max) + exp(s − max)): the share the sink logit took.

    s is entry `index` of the parameter `sink`; max is the largest of the row and s.
    """

    source: Place
    sink: str
    index: int


@dataclass(frozen=True)
class MovedNorm(Op):
    """out[i, j] = ‖A[i, j] · v_j · W_Oᵀ[column : column + d_h]‖: how much key j moves query i's output through this
    head after the output projection (Kobayashi et al. 2020). `weights` and `value` are the head's stages, `w_o` the
    parameter (d, heads·d_h) in nn.Linear's layout, `column` the head's first column in it."""

    weights: Place
    value: Place
    w_o: str
    column: int


@dataclass(frozen=True)
class ScoreMod(Op):
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
class BlockTiles(Op):
    """A flex_attention BlockMask as a tile map: out[qb, kb] = 0 (skipped), 1 (partial: mask_mod applied per cell)
    or 2 (full: computed without the mask_mod), for tiles of `block` = (query rows, key columns)."""

    block: tuple[int, int]
    shape: tuple[int, int]  # (L, S) the scores the tiles cover
    mask_mod: str  # the mask_mod's name and place, as the partial tiles apply it


@dataclass(frozen=True)
class GatedNorm(Op):
    """out[i, j] = source[i, j] / √(mean_m source[i, m]² + eps)·weight[j]·SiLU(gate[i, j]): Gated DeltaNet's
    norm of a head's output, opened by SiLU of the gate `gate` (an input of the trace, the layer's z)."""

    source: Place
    gate: str
    weight: str
    eps: float


@dataclass(frozen=True)
class CausalConv(Op):
    """out[t, j] = SiLU(Σ_i weight[c, i]·source[t − K + 1 + i, c]), c = offset + j, rows before 0 read as 0: a short
    causal convolution over each channel of `source` (an input of the trace), as Gated DeltaNet runs on q, k, v."""

    source: str
    weight: str
    offset: int
