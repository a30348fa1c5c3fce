"""DiffLlama (differential attention in a Llama body): Llama's projections, rotation and maps, then each pair of
heads' difference.

transformers' DiffLlama computes every one of its H heads as an ordinary softmax map over a rotated head (what
`output_attentions` returns), then pairs head p with head p + H/2: D = A_p − λ·A_{p+H/2}, read against the two
heads' values side by side (2·d_h wide), normed per pair and scaled by (1 − λ_init). The shared tracer records
the maps; `after` adds the pairs' stages at heads 0 … H/2 − 1, named as the `diff` variant names them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.attention.variants.diff import LambdaTerms
from attn_tui.errors import ConfigError
from attn_tui.i18n import Msg
from attn_tui.sources.families.llama import kv_heads, layer, rope_base
from attn_tui.sources.families.spec import AfterHeads, Family, LayerSpec
from attn_tui.trace.ops import Concat, Place

if TYPE_CHECKING:

    from attn_tui.sources.model_run import ModelRun
    from attn_tui.trace.stage import Trace


def pairs(trace: Trace, spec: LayerSpec, index: int, run_: ModelRun, step: int | None = None,
          queries: int | None = None) -> None:
    """lambda, value_pair, diff_weights, diff_output and head_norm of every pair of heads, then their concat (what
    o_proj reads); `step` places them at a generation step, where only the last `queries` rows query."""
    import torch

    from attn_tui.attention.attend import Tail
    from attn_tui.attention.variants.diff.maps import LAMBDA_NAMES, lambda_terms, record_concat, record_difference
    from attn_tui.trace.stage import Axis, Stage, dim_axis

    attn = run_.loaded.model.layers[index].self_attn
    heads, d_h = spec.heads, spec.head_dim
    if heads % 2:
        raise ConfigError(Msg("DiffLlama pairs its heads: {heads} heads cannot be paired", heads=heads))
    half = heads // 2
    prefix = f"blocks.{index}."
    vectors = {}
    for name in LAMBDA_NAMES:
        vectors[prefix + name] = getattr(attn, name).detach()  # (d_h,)
        trace.params[prefix + name] = vectors[prefix + name]
    lam = lambda_terms(vectors, prefix, index)  # (1, 4); λ_init of layer_idx = index, as the module's own
    first = 0 if queries is None else len(run_.tokens) - queries
    tokens = Axis("query", run_.tokens[first:])
    keys = Axis("key", run_.tokens)
    at = [Place("head_norm", index, p, step) for p in range(half)]  # each pair sits at its first head
    values = []
    for p, place in enumerate(at):
        parts = (Place("value", index, p, step), Place("value", index, p + half, step))
        joined = torch.cat([trace.stages[part].tensor for part in parts], dim=-1)  # (N, 2·d_h)
        values.append(trace.add(Stage(place.at("value_pair"), joined, Msg(
            "V = [V_{a} | V_{b}]: the values of heads {a} and {b} side by side, 2·{d} columns", a=p, b=p + half,
            d=d_h), (keys, dim_axis(2 * d_h)), Concat(parts))))
    a1 = torch.stack([trace.stages[Place("weights", index, p, step)].tensor for p in range(half)])  # (H/2, L, N)
    a2 = torch.stack([trace.stages[Place("weights", index, p + half, step)].tensor for p in range(half)])
    tail = Tail(tokens, keys)
    maps = [(Place("weights", index, p, step), Place("weights", index, p + half, step)) for p in range(half)]
    q1, k1, q2, k2 = (prefix + name for name in LAMBDA_NAMES)
    normed = record_difference(trace, tail, at, maps, lam, LambdaTerms(q1, k1, q2, k2, index), a1, a2,
                               torch.stack(values), [place.at("value_pair") for place in at],
                               eps=float(attn.groupnorm.eps or 0.0))  # (H/2, N, 2·d_h)
    record_concat(trace, normed, at, tokens, Place("concat", index, None, step))


FAMILY = Family("diffllama", causal=True, layer=layer, kv_heads=kv_heads, rope_base=rope_base,
                after_heads=(AfterHeads("paired heads", pairs),))
