"""Multi-head latent attention (MLA), DeepSeek-V2/V3: keys and values rebuilt from one cached latent.

The declaration: everything the front ends read before torch loads. The math is `compute.py`;
the inspector's arithmetic of its own ops is `explain.py`."""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.ask.option import Option
from attn_tui.ask.variant import Sizes, Variant
from attn_tui.i18n import N_, NP_
from attn_tui.trace.op import Op
from attn_tui.trace.place import Place
from attn_tui.trace.stage_kind import StageKind


@dataclass(frozen=True)
class DotSum(Op):
    """out[i, j] = Σ_pairs Σ_m left[i, m]·right[j, m]: a score made of several dot products added, as multi-head
    latent attention's is (the no-position part of q and k, plus their rotary part)."""

    pairs: tuple[tuple[Place, Place], ...]


@dataclass(frozen=True)
class Absorb(Op):
    """out[i, m] = Σ_c source[i, c]·weight[offset + c, m]: a query taken into a latent space through the rows of
    an up-projection (MLA's absorbed form: q·W_uk, so the scores meet the cached latent itself)."""

    source: Place
    weight: str
    offset: int


@dataclass(frozen=True)
class LatentKeyScale(Op):
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
class NormedAbsorb(Op):
    """out[i, c] = Σ_(m < width) source[i, m]·norm[column + m]·weight[offset + m, c]: a normed query's no-position
    part, times the key norm's weight, taken into the latent through W_uk (the key's weight moved to the query)."""

    source: Place
    norm: str
    column: int
    weight: str
    offset: int
    width: int


@dataclass(frozen=True)
class NormedLatentScore(Op):
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


KINDS = (
    StageKind("q_latent", "c_q", NP_("stage", "q_latent"), N_(
        "The query's low-rank path starts here: each token is squeezed into a few numbers by W_qa before every "
        "head's query is rebuilt from them. It saves weights, not cache: queries are never cached.")),
    StageKind("q_latent_norm", "ĉ_q", NP_("stage", "q_latent_norm"), N_(
        "The squeezed query is RMS-normalised and scaled by a learned weight, so the up-projection W_qb always "
        "reads numbers of the same size.")),
    StageKind("query_nope", "q_nope", NP_("stage", "query_nope"), N_(
        "The part of the head's query with no position in it: it meets the part of each key that is rebuilt "
        "from the cached latent.")),
    StageKind("query_rope", "q_rope", NP_("stage", "query_rope"), N_(
        "The small part of the head's query that will carry the position: it is rotated and meets the one "
        "rotary key every head shares.")),
    StageKind("kv_latent", "c_kv", NP_("stage", "kv_latent"), N_(
        "Keys and values of every head squeezed into one short vector per token by W_dkv. This latent is what "
        "a decoder caches, instead of a key and a value per head.")),
    StageKind("kv_latent_norm", "ĉ_kv", NP_("stage", "kv_latent_norm"), N_(
        "The latent RMS-normalised and scaled by a learned weight: every head's key and value is rebuilt from "
        "these numbers, and these are what the cache holds.")),
    StageKind("key_rope", "k_rope", NP_("stage", "key_rope"), N_(
        "One small key per token, shared by all heads, projected straight from the input: the only part of "
        "the keys that knows positions. It is kept outside the latent so that W_uk can be folded into the "
        "query.")),
    StageKind("latent_cache", "cache", NP_("stage", "latent_cache"), N_(
        "What a decoder keeps for every token: the normed latent and the rotated shared key, side by side. The "
        "caption compares its size with what plain multi-head attention would keep.")),
    StageKind("key_nope", "k_nope", NP_("stage", "key_nope"), N_(
        "The head's own key, rebuilt from the cached latent by its rows of W_uk: the part without a position.")),
    StageKind("query_absorbed", "q_abs", NP_("stage", "query_absorbed"), N_(
        "The absorbed form: the head's rows of W_uk are multiplied into the query instead of into every key, so "
        "the query meets the cached latent directly and no key is ever rebuilt. The scores are the same.")),
    StageKind("key_scale", "r_k", NP_("stage", "key_scale"), N_(
        "The absorbed form with a QK-norm: each key's norm factor 1/RMS, found from the cached latent alone. The "
        "rebuilt key's size is ĉ·(W_ukᵀW_uk)·ĉ, a small Gram matrix, so the norm needs no key to be built."),
        colour_scale="sequential"),
    StageKind("query_full", "q", NP_("stage", "query_full"), N_(
        "The head's whole query put back together, the no-position part beside the rotated part: what a QK-norm "
        "normalises (--qk-norm), as it does the whole key.")),
)


ABSORBED = Option("absorbed", bool, False,
                  N_("mla: fold W_uk into the query, so the scores meet the cached latent itself"),
                  label=NP_("setting", "absorbed"), row="checkbox", caption=N_("W_uk in q"), in_summary=False)


def _footprint(z: Sizes) -> dict[str, int]:
    """Its sizes as compute.py draws them from d and H."""
    d, n, h = z.d_q, z.queries, z.heads
    d_h = max(1, d // h)
    d_r, q_r, kv_r = max(2, 2 * (d_h // 4)), max(1, d // 2), max(1, d // 4)
    return {"parameters": q_r * d + h * (d_h + d_r) * q_r + (kv_r + d_r) * d + 2 * h * d_h * kv_r + d * h * d_h,
            "projections": n * (2 * q_r + h * (3 * d_h + 2 * d_r) + 2 * kv_r + 3 * d_r + h * (2 * d_h + d_r)),
            "score stages": 4 * h * n * n, "output": 3 * n * d}


VARIANT = Variant(
    name="mla", title="Multi-head latent attention (DeepSeek)", order=120,
    stages=("q_latent", "q_latent_norm", "query", "query_nope", "query_rope", "query_rot", "kv_latent",
            "kv_latent_norm", "key_rope", "key_rot", "latent_cache", "value", "key_nope", "key", "query_absorbed",
            "scores", "scaled", "masked", "weights", "output", "concat", "projected"),
    footprint=_footprint, takes_x=True, reads=("heads", "rope_base"), own=(ABSORBED,),
    query_norm_parts=1,  # a QK-norm sees each head's whole query, put back together before its norm
)
