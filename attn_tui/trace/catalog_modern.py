"""The stage kinds of the newer mechanisms and of a model writing, part of the one catalog (catalog.py reads them).

Multi-head latent attention, differential attention, linear attention's recurrent state, and a causal model's
cache and sampler: each group is the stages its source writes, in the order they are made.
"""

from __future__ import annotations

from attn_tui.i18n import N_, NP_
from attn_tui.trace.stage_kind import StageKind

MODERN_KINDS = (
    # multi-head latent attention (the mla variant, DeepSeek-V2/V3's deepseek_v3 family)
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
    # differential attention (the diff variant, DiffLlama): two maps from halves of each head, their difference
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
    # linear attention's recurrent state (variant linear; Qwen3-Next's Gated DeltaNet layers)
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
    StageKind("gated_norm", "O_n", NP_("stage", "gated_norm"), N_(
        "A Gated DeltaNet head's output, normed (RMSNorm with a learned weight) and multiplied by SiLU of a gate "
        "z computed from the token: what the layer's out_proj reads.")),
    # a causal model writing: its key/value cache and the sampler after its last layer (sources/generate.py)
    StageKind("cache_keys", "K_cache", NP_("stage", "cache_keys"), N_(
        "What the model keeps of every position it has read, so a new token's query need not recompute them: "
        "the keys after their rotation, one row a position, per key/value head. Each step adds a row; a "
        "sliding-window layer drops the rows that left its window.")),
    StageKind("cache_values", "V_cache", NP_("stage", "cache_values"), N_(
        "The values kept beside the cached keys, one row a position: what a new token's weights mix.")),
    StageKind("written", "A_≤t", NP_("stage", "written"), N_(
        "The weights rows the model wrote so far, one under the other: each generated token's one row over "
        "the keys it had (the prompt's rows at the first step). A row is added each step; right of a row's "
        "last key nothing was there yet."), colour_scale="probability"),
    StageKind("logits", "z", NP_("stage", "logits"), N_(
        "The last layer's output at the newest position times the output embedding of each token of the "
        "vocabulary: one score per token. Shown are the likeliest 20.")),
    StageKind("tempered", "z/T", NP_("stage", "tempered"), N_(
        "The logits divided by the temperature: below 1 the likeliest tokens gain, above 1 the choice spreads.")),
    StageKind("cut", "z_cut", NP_("stage", "cut"), N_(
        "Top-k keeps the k likeliest tokens, top-p the likeliest whose probabilities reach p; every other "
        "token gets −∞ and can no longer be drawn.")),
    StageKind("probs", "p", NP_("stage", "probs"), N_(
        "Softmax of the logits over the whole vocabulary: the probability of each token being written next."),
        colour_scale="sequential"),
    StageKind("chosen", "chosen", NP_("stage", "chosen"), N_(
        "The token written at this step: the most probable (greedy) or one drawn from the probabilities."),
        colour_scale="sequential"),
)
