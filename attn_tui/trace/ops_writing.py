"""The ops of a model writing: the sampler's stages after the last layer and the rows written so far (`ops`
re-exports them)."""

from __future__ import annotations

from dataclasses import dataclass

from attn_tui.trace.op import Op
from attn_tui.trace.place import Place


@dataclass(frozen=True)
class VocabCut(Op):
    """The sampler's top-k / top-p cut, as transformers' warpers make it: out[0, j] = source[0, j] for a token
    they keep, −∞ for one they drop. `ranks[j]` is column j's rank in the whole vocabulary (0 = likeliest) and
    `before[j]` the probability of every token ranked above it (what top-p compares with P)."""

    source: Place
    top_k: int  # 0: no top-k
    top_p: float  # 1: no top-p
    ranks: tuple[int, ...]
    before: tuple[float, ...]


@dataclass(frozen=True)
class VocabSoftmax(Op):
    """out[0, j] = exp(source[0, j] − log Σ_v exp(source[0, v])): a probability over the whole vocabulary, of
    which a stage shows a few columns; `log_total` is that log-sum over all `vocab` tokens."""

    source: Place
    log_total: float
    vocab: int


@dataclass(frozen=True)
class Chosen(Op):
    """out[0, j] = 1 for the token written, 0 elsewhere: the largest probability (greedy), or drawn from
    `source`'s probabilities by a generator seeded with `seed`."""

    source: Place
    column: int
    drawn: bool
    seed: int = 0


@dataclass(frozen=True)
class Written(Op):
    """out[r, j] = row `rows[r][1]` of stage `rows[r][0]` at key j (0 right of the keys that row read): the
    weights rows a model wrote so far, one under the other, each from its own step."""

    rows: tuple[tuple[Place, int], ...]
