"""The one catalog of stage kinds: each stage name's symbol, title, explanation, and how it is coloured.

Every view reads a stage kind from here: the app's stage bar (title), heatmap and legend
(probability, colour scale), explanation pane (explanation), the inspector's formulas
(symbol) and the CLI's table. A stage name the catalog does not know (a recorded
user's module may name anything) gets a default kind: its name as symbol and title,
no explanation, a diverging scale.

Titles and explanations are English message ids (marked with `NP_("stage", …)` and `N_`);
`attn_tui.present.titles` and `attn_tui.present.explanations` show them in the language on
show. A run may do a step its own way: `by_run` holds the explanation for a run whose
explanation keys (`meta.explains`, most specific first) name it ("additive", "llama", …).

A stage kind shared by several sources is one `StageKind` below; a variant's own kinds, and its own words for a
shared stage (`Variant.explains`), are declared in its package and gathered here. Each needs its Korean title in
the message catalog; tests/trace/test_catalog.py fails for a stage name a source writes and the catalog lacks.
"""

from __future__ import annotations

from dataclasses import replace

from attn_tui.ask.variants import VARIANTS, declarations
from attn_tui.i18n import N_, NP_
from attn_tui.trace.stage_kind import ColourScale, StageKind

__all__ = ["KINDS", "ColourScale", "StageKind", "kind_of", "symbol"]

_SHARED = (
    # the words and their positions
    StageKind("embedding", "X", NP_("stage", "embedding"), N_(
        "Each word is looked up in a table and becomes a vector of numbers. The table here is random but "
        "seeded, so the same word always gets the same vector; a trained model would have learned these "
        "rows.")),
    StageKind("positional", "PE", NP_("stage", "positional"), N_(
        "Attention by itself does not know word order: shuffling the words only shuffles the rows. Sine "
        "and cosine waves of different frequencies give every position its own pattern, which is added to"
        " the word vectors.")),
    StageKind("embedded_pos", "X", NP_("stage", "embedded_pos"), N_(
        "The word vector plus its position vector. From here on, the same word at two places in the "
        "sentence is two different vectors.")),
    # projections
    StageKind("query", "Q", NP_("stage", "query"), N_(
        "Each row is a query: what this token is looking for. It is the token's vector seen through a "
        "learned projection W_q, so the model can ask about something other than the token itself."),
        by_run={
        "decoder": N_(
        "The query is the decoder's state: the GRU's memory of the date so far and of what it has "
        "written. It asks: which input characters matter for the next output character?"),
        "transformer-dates": N_(
        "Each head projects its own queries with W_q from the layer's normalised input. In the encoder every "
        "input character asks about the others; in the decoder's self-attention the newest position asks "
        "about what has been written so far; in cross-attention it asks which input characters to read next."),
        "llama": N_(
        "The query of this head: the layer's input after RMSNorm, times the model's own W_q, cut to this "
        "head's columns. It is shown before the rotation; the next stages turn it by its position.")}),
    StageKind("key", "K", NP_("stage", "key"), N_(
        "Each row is a key: how this token advertises itself to the queries. A query and a key that point"
        " the same way will give a large score."),
        by_run={
        "decoder": N_(
        "The keys are the encoder's outputs, one per input character. A bidirectional GRU read the whole "
        "date both ways, so each row knows its character and the characters around it."),
        "transformer-dates": N_(
        "Each head projects its own keys with W_k. In the encoder and in cross-attention there is one key per "
        "input character (cross-attention's come from the encoder's output); in the decoder's self-attention "
        "one per position written so far, starting with <s>."),
        "llama": N_(
        "The key this head reads is its group's: SmolLM2 has 9 query heads and 3 key/value heads, so three "
        "query heads share each key. Shown before the rotation.")}),
    StageKind("value", "V", NP_("stage", "value"), N_(
        "Each row is a value: what this token hands over when it is attended to. Keys decide who is "
        "chosen; values are what gets mixed into the answer."),
        by_run={
        "transformer-dates": N_(
        "Each head projects its own values with W_v from the same rows as the keys. The keys decide where a "
        "head looks; the values are what it carries back from there."),
        "llama": N_(
        "The value rows of this head's key/value head, shared with the other query heads of its group. They are"
        " not rotated: only queries and keys carry position.")}),
    StageKind("qkv_proj", "QKV", NP_("stage", "qkv_proj"), N_(
        "One matrix product makes the queries, keys and values of every head at once. The result is cut "
        "into three parts and then into one slice of columns per head.")),
    StageKind("q_proj", "Q", NP_("stage", "q_proj"), N_(
        "One matrix product makes the queries of every query head at once. Each head then takes its own slice "
        "of the columns.")),
    StageKind("k_proj", "K", NP_("stage", "k_proj"), N_(
        "The keys are made for fewer heads than the queries: only the key/value heads. This is what a decoder "
        "keeps in its cache for every token, so fewer heads means a smaller cache.")),
    StageKind("v_proj", "V", NP_("stage", "v_proj"), N_(
        "The values, like the keys, exist only for the key/value heads. Several query heads will read the same "
        "values.")),
    StageKind("query_proj", "Q'", NP_("stage", "query_proj"), N_(
        "The query is multiplied by a learned matrix W_a before it meets the keys. This lets the model "
        "compare vectors of different sizes and decide which directions matter.")),
    StageKind("key_proj", "K'", NP_("stage", "key_proj"), N_(
        "Each key is mapped into the same hidden space with U_a. A query and a key can now be added "
        "together, which is the heart of additive attention.")),
    # positions inside attention (rotary)
    StageKind("query_rot", "Q_rot", NP_("stage", "query_rot"), N_(
        "Each query is turned by an angle that grows with its position: dimension i and dimension i + d/2 form a "
        "pair, rotated like a point in the plane by p·θ_i. Low pairs turn fast and high pairs slowly, so the "
        "angles together encode where the token is.")),
    StageKind("key_rot", "K_rot", NP_("stage", "key_rot"), N_(
        "The keys are turned the same way, by their own positions. Because both sides are rotated, the dot "
        "product of query i and key j only depends on the difference i − j: the scores see relative position.")),
    # scores and their normalisation
    StageKind("query_norm", "Q_n", NP_("stage", "query_norm"), N_(
        "Each head's query is normalised before it meets the keys, over its own dimensions (Qwen3, Gemma 3) or "
        "over the whole projection, every head's dimensions together (OLMo-2): its size is taken out and a "
        "learned weight per dimension put back, so no head's scores can grow without bound as training goes on.")),
    StageKind("key_norm", "K_n", NP_("stage", "key_norm"), N_(
        "Each head's key is normalised as the query is (over the head's dimensions, or over the whole projection "
        "in OLMo-2): with both normed, a score measures direction more than length.")),
    StageKind("energy", "E", NP_("stage", "energy"), N_(
        "For every query-key pair a small neural network layer is applied: tanh of the two projections "
        "added (or of the pair concatenated). The heatmap shows one query at a time: rows are keys, "
        "columns are hidden units.")),
    StageKind("scores", "S", NP_("stage", "scores"), N_(
        "Every query is compared with every key by a dot product: large when they point the same way. Row"
        " i says how well query i matches each key, before any normalisation."),
        by_run={
        "transformer-dates": N_(
        "Every query is compared with every key by a dot product, separately in each head. A head only sees "
        "its own slice of W_q and W_k, so different heads can match on different things: digits, month names, "
        "positions.")}),
    StageKind("scaled", "S'", NP_("stage", "scaled"), N_(
        "The scores are divided by √d_k. A dot product of d_k random terms grows like √d_k, and large "
        "scores push softmax into a one-hot with vanishing gradients; the division keeps them near unit "
        "size.")),
    StageKind("capped", "S_cap", NP_("stage", "capped"), N_(
        "The logit soft cap (Gemma 2) passes each scaled score through cap·tanh(s / cap): small scores pass "
        "almost unchanged, large ones are pressed towards ±cap, so no single key can take all the weight "
        "by an extreme score.")),
    StageKind("score_mod", "S_mod", NP_("stage", "score_mod"), N_(
        "flex_attention hands every scaled score to your score_mod function together with its batch item, head, "
        "query index and key index, and uses what it returns: a soft cap, a position bias (ALiBi, a learned "
        "relative bias) or anything written in torch. The inspector shows the function's input and output for "
        "the cell.")),
    StageKind("block_map", "BM", NP_("stage", "block_map"), N_(
        "The BlockMask cuts the scores into tiles of queries × keys. The kernel skips a tile where the mask_mod "
        "is False everywhere (dark), computes it without the mask where it is True everywhere (full, bright), "
        "and applies the mask_mod cell by cell only in the partial tiles between. Skipped tiles are the speed "
        "of a sparse mask."),
        colour_scale="sequential"),
    StageKind("bias", "B", NP_("stage", "bias"), N_(
        "Something the code adds to the scores that is not a mask: a position bias, for example. It "
        "shifts some scores up or down before the softmax.")),
    StageKind("biased", "S'+B", NP_("stage", "biased"), N_(
        "The scores with the code's bias added: what the softmax (or the mask) reads next.")),
    StageKind("masked", "M", NP_("stage", "masked"), N_(
        "Where the mask is 0 (padding, or a future word under a causal mask) the score is replaced by -∞ "
        "or -1e9, so softmax gives it no weight. The mask here follows torch: 1 means the query may "
        "attend to the key."),
        by_run={
        "typed-block": N_(
        "This mask was typed the other way round from torch: 1 marks a blocked key (padding, as the study "
        "notes write it) and 0 a key the query may see. The heatmap and its masked cells still show torch's "
        "view, 1 = may attend; the caption and the inspector say what was typed."),
        "code-mask": N_(
        "Your code masked its scores in its own way. The heatmap shows torch's view (masked cells = may not "
        "attend); the inspector shows your code's own mask value at the cell and what the code did with it, "
        "for example True → filled with -inf by masked_fill."),
        "transformer-dates": N_(
        "Nothing is masked here. A date is one input with no padding, and at a decoder step the later "
        "positions do not exist yet, so the causal mask that hides them in training has nothing to hide.")}),
    StageKind("weights", "A", NP_("stage", "weights"), N_(
        "Softmax turns each row of scores into probabilities: exponentiate, then divide by the row's sum,"
        " so every row sums to 1. Subtracting the row's maximum first changes nothing but avoids "
        "overflow."),
        colour_scale="probability",
        by_run={
        "diffllama": N_(
        "An ordinary softmax map of this head, as transformers' output_attentions returns it. DiffLlama's heads "
        "come in pairs, h and h + H/2: at the pair's first head, the next stages subtract the second map from "
        "the first.")}),
    StageKind("moved", "M", NP_("stage", "moved"), N_(
        "How much each key actually moves the query's output through this head: the length of the weight "
        "times the key's value after the output projection, ‖A[i,j] · v_j·W_O,hᵀ‖ (Kobayashi et al. 2020, "
        "\"Attention is not only a weight\"). A large weight on a key whose value W_O maps to almost nothing "
        "moves almost nothing; the first token often takes much weight and moves little."),
        colour_scale="sequential"),
    StageKind("sink_mass", "p_sink", NP_("stage", "sink_mass"), N_(
        "How much of each query's softmax went to the sink. A query with high sink mass mostly ignored the "
        "keys; trained models without a sink use the first token for this."),
        colour_scale="sequential"),
    # the output
    StageKind("output", "O", NP_("stage", "output"), N_(
        "Each output row is a weighted average of the value rows, using that query's weights. A query "
        "that puts all its weight on one key simply copies that key's value."),
        by_run={
        "transformer-dates": N_(
        "Each row is this head's weighted average of the value rows. The heads' outputs are then joined side "
        "by side and mixed by W_o, added to the layer's input, and passed on.")}),
    StageKind("gate", "G", NP_("stage", "gate"), N_(
        "The output gate: σ(X·W_g), one number between 0 and 1 for every query and every dimension of the head, "
        "computed from the token itself. It decides how much of what attention gathered is let through.")),
    StageKind("gated", "O_g", NP_("stage", "gated"), N_(
        "The head's output multiplied by its gate, element by element. A query that found nothing useful can "
        "close its gate instead of taking whatever the softmax forced it to gather (often the first token).")),
    StageKind("context", "c", NP_("stage", "context"), N_(
        "The context is the weighted average of the encoder outputs, using this step's weights. It is "
        "what the decoder reads before writing its next character.")),
    StageKind("concat", "C", NP_("stage", "concat"), N_(
        "The outputs of all heads are placed side by side. Each head could attend to something different;"
        " here their findings are gathered into one vector per token.")),
    StageKind("projected", "Y", NP_("stage", "projected"), N_(
        "A final learned matrix W_o mixes the heads' outputs together. This is the layer's result, with "
        "the same width as its input so layers can be stacked.")),
    # a decoder's alignment and a model's rollout
    StageKind("alignment", "A", NP_("stage", "alignment"), N_(
        "One row per output character, one column per input character: the weights of every decoder step "
        "stacked. A trained model lines up '11' with the month and '22' with the day."),
        colour_scale="probability",
        by_run={
        "transformer-dates": N_(
        "One row per output character, one column per input character: the cross-attention weights of the "
        "chosen layer and head at every decoder step, stacked. A head that reads the date lines up the year "
        "digits with the input's year; another may look elsewhere.")}),
    StageKind("alignment_mean", "alignment_mean", NP_("stage", "alignment_mean"), N_(
        "The cross-attention alignments of the layer's heads averaged cell by cell. Each row still sums to 1; "
        "it shows where the layer as a whole read from, at the price of blurring what single heads do."),
        colour_scale="probability"),
    StageKind("rollout", "rollout", NP_("stage", "rollout"), "",
        colour_scale="probability"),
    # what recorded code does that the variants do not (attn-tui trace, attn_tui.record())
    StageKind("input", "X", NP_("stage", "input"), N_(
        "The tensor the code handed to its projections, as it was at that call: the token vectors the "
        "queries, keys and values are made from.")),
    StageKind("key_input", "key_input", NP_("stage", "key_input"), N_(
        "The tensor the keys (and values) are projected from when it is not the queries' own input: the "
        "encoder's output or the memory that a decoder reads in cross-attention.")),
    StageKind("value_input", "value_input", NP_("stage", "value_input"), N_(
        "The tensor the values are projected from, when it is neither the queries' nor the keys' input.")),
    StageKind("key_scaled", "key_scaled", NP_("stage", "key_scaled"), N_(
        "The code scaled the keys by a number before the product, so the scores come out already scaled. "
        "Dividing K by √d_k first or the product afterwards gives the same numbers up to rounding.")),
    StageKind("query_scaled", "query_scaled", NP_("stage", "query_scaled"), N_(
        "The code scaled the queries by a number before the product (torch's own MultiheadAttention does "
        "this), so the scores come out already scaled.")),
    StageKind("shifted", "shifted", NP_("stage", "shifted"), N_(
        "The scores minus the largest score of their row. The softmax comes out the same, but exp can no "
        "longer overflow: the code wrote the softmax out by hand and guarded it.")),
    StageKind("dropped", "dropped", NP_("stage", "dropped"), N_(
        "The weights after dropout: in training mode some weights are set to 0 and the rest are scaled "
        "up, so the output uses these rather than the softmax itself.")),
    StageKind("reweighted", "reweighted", NP_("stage", "reweighted"), N_(
        "The weights as the code changed them after the softmax (padding zeroed, NaN replaced, rows "
        "renormalised): the values are summed with these, so the output follows them rather than the "
        "softmax itself.")),
    StageKind("mean_weights", "mean_weights", NP_("stage", "mean_weights"), N_(
        "nn.MultiheadAttention returns the weights averaged over its heads unless told otherwise; this is "
        "that average, as the module returned it."),
        colour_scale="probability"),
    # Qwen3-Next's Gated DeltaNet layers (their state's stages are the linear variant's)
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


def _catalog() -> dict[str, StageKind]:
    """The shared kinds, each variant's own (its package's `KINDS`), and each variant's words for a shared stage
    (its `explains`, under the variant's name as the run's explanation key)."""
    found = {kind.name: kind for kind in _SHARED}
    for module in declarations():
        for kind in getattr(module, "KINDS", ()):
            if kind.name in found:
                raise TypeError(f"the stage kind {kind.name!r} is declared twice (again in {module.__name__})")
            found[kind.name] = kind
    for variant in VARIANTS.values():
        for name, explanation in variant.explains.items():
            kind = found[name]
            found[name] = replace(kind, by_run={**kind.by_run, variant.name: explanation})
    return found


KINDS: dict[str, StageKind] = _catalog()


def kind_of(name: str) -> StageKind:
    """The kind of a stage name; a name the catalog does not know is shown as it is, signed, unexplained."""
    found = KINDS.get(name)
    return found if found is not None else StageKind(name, name, name)


def symbol(name: str) -> str:
    return kind_of(name).symbol
