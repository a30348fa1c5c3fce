"""Differential attention: two softmax maps from halves of each head, one minus λ times the other.

The declaration: everything the front ends read before torch loads. The math is `compute.py`;
the inspector's arithmetic of its own ops is `explain.py`."""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.ask.option import whole
from attn_tui.ask.variant import Sizes, Variant
from attn_tui.i18n import N_, NP_
from attn_tui.trace.op import Op
from attn_tui.trace.place import Place
from attn_tui.trace.stage_kind import StageKind


@dataclass(frozen=True)
class LambdaTerms(Op):
    """Differential attention's λ as a row of its parts: out[0] = exp(λ_q1·λ_k1), out[1] = exp(λ_q2·λ_k2),
    out[2] = λ_init = 0.8 − 0.6·exp(−0.3·depth), out[3] = λ = out[0] − out[1] + out[2].

    The four vectors are parameters named `q1`, `k1`, `q2`, `k2`; `depth` is the layer's index from 0."""

    q1: str
    k1: str
    q2: str
    k2: str
    depth: int


@dataclass(frozen=True)
class DiffWeights(Op):
    """out[i, j] = first[i, j] − λ·second[i, j], λ = lam[0, 3]: the difference of two softmax maps."""

    first: Place
    second: Place
    lam: Place


@dataclass(frozen=True)
class DiffNorm(Op):
    """out[p, j] = (1 − λ_init)·x_j / √(mean_m x_m² + eps), λ_init = lam[0, 2]: the per-head RMSNorm of a
    differential head's output (no learned weight), scaled back by 1 − λ_init."""

    source: Place
    lam: Place
    eps: float


KINDS = (
    StageKind("query_1", "Q₁", NP_("stage", "query_1"), N_(
        "The first half of each query's columns. Differential attention cuts every head's query and key in two "
        "and builds one attention map from each pair of halves.")),
    StageKind("query_2", "Q₂", NP_("stage", "query_2"), N_(
        "The second half of each query's columns. It asks its own question, and its map will be subtracted "
        "from the first.")),
    StageKind("key_1", "K₁", NP_("stage", "key_1"), N_(
        "The first half of each key's columns, read by the first half of the queries. Only these halves meet in "
        "the first map.")),
    StageKind("key_2", "K₂", NP_("stage", "key_2"), N_(
        "The second half of each key's columns, read by the second half of the queries. Only these halves meet in "
        "the second map.")),
    StageKind("query_1_norm", "Q₁,n", NP_("stage", "query_1_norm"), N_(
        "The first half of each query, normalised (--qk-norm): its size taken out and a learned weight per "
        "dimension put back, as a head of that width would be.")),
    StageKind("query_2_norm", "Q₂,n", NP_("stage", "query_2_norm"), N_(
        "The second half of each query, normalised the same way with the same weight: the two maps are then "
        "built from normed halves.")),
    StageKind("key_1_norm", "K₁,n", NP_("stage", "key_1_norm"), N_(
        "The first half of each key, normalised as the queries' halves are: the first map then measures "
        "direction more than length.")),
    StageKind("key_2_norm", "K₂,n", NP_("stage", "key_2_norm"), N_(
        "The second half of each key, normalised: the second map too measures direction more than length.")),
    StageKind("scores_1", "S₁", NP_("stage", "scores_1"), N_(
        "The first map's scores: every first-half query against every first-half key. A large score means the two "
        "halves point the same way.")),
    StageKind("scaled_1", "S'₁", NP_("stage", "scaled_1"), N_(
        "The first map's scores divided by √d, where d is the width of a half. Each half is scaled as a head of "
        "that width would be.")),
    StageKind("capped_1", "S_cap₁", NP_("stage", "capped_1"), N_(
        "The first map's scaled scores through the soft cap, cap·tanh(s / cap) (--softcap): large scores are "
        "pressed towards ±cap before the mask and the softmax.")),
    StageKind("masked_1", "M₁", NP_("stage", "masked_1"), N_(
        "The first map's scaled scores with the mask applied: keys a query may not see get the fill. Both maps "
        "use the same mask.")),
    StageKind("weights_1", "A₁", NP_("stage", "weights_1"), N_(
        "The first attention map: a softmax over the keys, each row summing to 1. It holds the signal, and the "
        "noise every softmax must put somewhere."), colour_scale="probability"),
    StageKind("scores_2", "S₂", NP_("stage", "scores_2"), N_(
        "The second map's scores: every second-half query against every second-half key. This map is the one that "
        "will be subtracted.")),
    StageKind("scaled_2", "S'₂", NP_("stage", "scaled_2"), N_(
        "The second map's scores divided by √d, where d is the width of a half. The same factor as the first "
        "map's.")),
    StageKind("capped_2", "S_cap₂", NP_("stage", "capped_2"), N_(
        "The second map's scaled scores through the same soft cap: both maps are capped before their softmax, so "
        "neither can be a one-hot made by one extreme score.")),
    StageKind("masked_2", "M₂", NP_("stage", "masked_2"), N_(
        "The second map's scaled scores with the same mask applied. Keys a query may not see get the fill here "
        "too.")),
    StageKind("weights_2", "A₂", NP_("stage", "weights_2"), N_(
        "The second attention map, also a softmax summing to 1 per row. Trained, it learns to look where the "
        "first map's noise is, so that subtracting it cancels the noise."), colour_scale="probability"),
    StageKind("lambda", "λ", NP_("stage", "lambda"), N_(
        "λ, how much of the second map to subtract: exp(λ_q1·λ_k1) − exp(λ_q2·λ_k2) + λ_init, from four "
        "learned vectors and a starting value λ_init that grows with the layer's depth. The cells show its "
        "parts and λ itself.")),
    StageKind("value_pair", "V", NP_("stage", "value_pair"), N_(
        "The values of a pair of heads side by side. DiffLlama reads each pair's difference map against both "
        "heads' values, so its output is twice as wide as one head.")),
    StageKind("diff_weights", "D", NP_("stage", "diff_weights"), N_(
        "The differential map A₁ − λ·A₂. What both maps share cancels, like the common noise of a "
        "differential amplifier; the rest is sharper. Rows sum to 1 − λ and a cell can be negative: blue "
        "means the key is pushed away."), by_run={
        "diffllama": N_(
        "DiffLlama pairs its heads: head h's map minus λ times the map of head h + H/2, both ordinary softmax "
        "maps over rotated halves. Rows sum to 1 − λ and a cell can be negative.")}),
    StageKind("diff_output", "O", NP_("stage", "diff_output"), N_(
        "The values mixed by the differential map: each row is a weighted sum of value rows whose weights may "
        "be negative. The value keeps the head's whole width, twice that of a half.")),
    StageKind("head_norm", "Y", NP_("stage", "head_norm"), N_(
        "Each head's output normalised by its RMS, then scaled by 1 − λ_init. Subtracting maps leaves heads of "
        "very different sizes; the norm puts them back on one scale before the heads are joined.")),
)


DEPTH = whole("depth", 0, 0, 1000, "L", NP_("setting", "λ depth"),
              N_("diff: the layer's index from 0, which sets λ_init = 0.8 − 0.6·exp(−0.3·L) (default 0)"))


def _footprint(z: Sizes) -> dict[str, int]:
    """Two score maps (scores, scaled, masked, weights each) and their difference, per head."""
    return {"score stages": 9 * z.heads * z.queries * z.keys, "parameters": 2 * z.d_q,
            "halves and outputs": 2 * (z.queries + z.keys) * z.d_q + 3 * z.queries * z.d_v}


VARIANT = Variant(
    name="diff", title="Differential (two maps, one minus the other)", order=130,
    stages=("query", "key", "value", "query_1", "query_2", "key_1", "key_2", "scores_1", "scaled_1", "masked_1",
            "weights_1", "scores_2", "scaled_2", "masked_2", "weights_2", "lambda", "diff_weights", "diff_output",
            "head_norm", "concat"),
    footprint=_footprint, per_head=True, reads=("heads",), own=(DEPTH,), maps=2,  # a soft cap caps both maps
)
