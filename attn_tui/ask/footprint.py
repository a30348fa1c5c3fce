"""What a variant request will allocate, from its sizes alone: torch-free, linear in the input's length.

Counted before anything is embedded or projected, so a sentence of 100,000 words or a
16,000-wide typed X is refused in milliseconds rather than after seconds of work.
"""

from __future__ import annotations

from attn_tui.ask.budget import Estimate, json_numbers
from attn_tui.ask.checks import check_fields, matrix_shape
from attn_tui.ask.options import limit
from attn_tui.ask.settings import DEFAULT_DIM, MatrixInput, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.ask.variants import VARIANTS, Sizes
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import N_, Msg
from attn_tui.io.files import check_text

# The widest input and the most heads are the settings' own bounds (`limit("dim")`, `limit("heads")`), read from
# the option schema when a request is counted, so the budget and every front end agree on them.
MAX_TOKENS = 16384  # queries or keys
LAZY_CELLS = 1 << 16  # an attention with more query × key cells than this keeps its score stages lazy
PASS_ROWS = 64  # query rows per block of the streaming pass over lazy score stages
STAGE_BYTES = 4096  # a stage's record beside its numbers: the Stage, its tensors' headers, its axes and formula
ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


def _width(rows: list[list[float]], name: str) -> int:
    width = matrix_shape(rows, name)[1]
    check_width(width, name)
    return width


class _Measure:
    """(queries, keys, width of Q, K, V, numbers the input holds) of each kind of input, checked as it is read."""

    def __init__(self, dim: int) -> None:
        self.dim = dim  # a sentence's embedding width

    def matrices(self, source: MatrixInput) -> tuple[int, int, int, int, int, int]:
        n_q, n_k = len(source.q), len(source.k)
        d_q, d_k, d_v = _width(source.q, "Q"), _width(source.k, "K"), _width(source.v, "V")
        return n_q, n_k, d_q, d_k, d_v, n_q * d_q + n_k * (d_k + d_v)

    def sentence(self, source: SentenceInput) -> tuple[int, int, int, int, int, int]:
        words = check_text(source.text, Msg("the sentence")).split()
        n, d = len(words), self.dim
        if n == 0:
            raise InputError(Msg("the sentence is empty: type at least one word"))
        return n, n, d, d, d, len(set(words)) * d + n * d  # the embedding table and X

    def x(self, source: XInput) -> tuple[int, int, int, int, int, int]:
        n, d = len(source.x), _width(source.x, "X")
        return n, n, d, d, d, n * d


def check_width(width: int, name: str | Msg) -> None:
    """A typed matrix is no wider than a sentence's embedding may be (the `dim` setting's bound)."""
    if width > limit("dim"):
        raise ConfigError(Msg("{name} is {width} numbers wide; attn-tui shows widths up to {max}", name=name,
                              width=width, max=limit("dim")))


def ask_sizes(request: VariantAsk) -> tuple[Sizes, int]:
    """(the variant's sizes, the numbers the inputs themselves hold: embedding table, X, PE, W_q/W_k/W_v)."""
    s = request.settings
    check_fields(s)
    variant = VARIANTS.get(s.variant)
    if variant is None:
        raise ConfigError(Msg("unknown variant {name}; choose one of {names}", name=repr(s.variant),
                              names=", ".join(VARIANTS)))
    if s.dim is not None and not 1 <= s.dim <= limit("dim"):
        raise ConfigError(Msg("--dim must be between 1 and {max}, not {dim}", max=limit("dim"), dim=s.dim))
    n_q, n_k, d_q, d_k, d_v, inputs = request.source.read(_Measure(s.dim or DEFAULT_DIM))
    if not request.source.typed:  # token vectors: positions, then (unless the variant projects itself) W_q, W_k, W_v
        n, d = n_q, d_q
        inputs += 2 * n * d if s.positional else 0
        if not variant.takes_x:
            inputs += 3 * d * d + 3 * n * d  # W_q, W_k, W_v and the projections
    if request.custom_mask is not None:
        matrix_shape(request.custom_mask, Msg("the mask"))  # its size against the scores' is checked where it is built
    for count, what in ((n_q, N_("{count} queries; attn-tui shows at most {max}: shorten the input")),
                        (n_k, N_("{count} keys; attn-tui shows at most {max}: shorten the input"))):
        if count > MAX_TOKENS:
            raise ConfigError(Msg(what, count=f"{count:,}", max=f"{MAX_TOKENS:,}"))
    hidden = s.dim if (variant.uses_hidden and s.dim) else d_q
    heads = s.heads if variant.has_heads else 1
    if not 1 <= heads <= limit("heads"):
        raise ConfigError(Msg("--heads {heads}: attn-tui shows 1 to {max} heads", heads=heads, max=limit("heads")))
    if not variant.lazy and n_q * n_k > LAZY_CELLS:  # a variant that holds its stages whole (flash, diff, linear)
        raise ConfigError(Msg(variant.long_input, variant=s.variant, most=f"{LAZY_CELLS:,}", cells=f"{n_q * n_k:,}"))
    sizes = Sizes(n_q, n_k, d_q, d_k, d_v, hidden, heads, s)
    if variant.check is not None:
        variant.check(sizes)
    return sizes, inputs


def stage_count(variant_name: str, z: Sizes) -> int:
    """How many stages the trace will hold: per head where it splits heads, and those the variant adds by size."""
    variant = VARIANTS[variant_name]
    count = len(variant.stages) * (z.heads if variant.has_heads else 1)
    if variant.more_stages is not None:  # flash's tiles, linear's states
        count += variant.more_stages(z)
    return count + 4  # the input stages a sentence adds (embedding, positional, …)


def modifier_parts(settings: Settings, z: Sizes) -> dict[str, int]:
    """What a soft cap, a QK-norm and the output gate add to a score-based variant's footprint, by part."""
    variant = VARIANTS[settings.variant]
    if not variant.score_based:
        return {}
    found = {"score stages": variant.maps * z.heads * z.queries * z.keys} if settings.softcap is not None else {}
    extra = 0
    if settings.qk_norm != "none":
        d_h = max(1, z.d_q // z.heads)
        extra += z.heads * (z.queries + z.keys) * d_h + z.d_q + z.d_k  # q_n, k_n, weights
        extra += variant.query_norm_parts * z.heads * z.queries * d_h
    if settings.gate:
        extra += 2 * z.queries * z.d_v * max(1, z.heads) + z.d_q * z.d_v * max(1, z.heads)  # gate, gated, W_g
    return found | ({"output": extra} if extra else {})


def lazy_parts(z: Sizes) -> dict[str, int]:
    """What lazy score stages hold: the streaming pass's blocks, the tiles on screen, each row's lse."""
    block = PASS_ROWS * z.keys * z.heads
    return {N_("score stages"): 8 * block + z.heads * z.queries, N_("energy"): 2 * block * z.hidden,
            N_("pairs [q; k]"): block * (z.d_q + z.d_k)}


def estimate(request: VariantAsk, json_output: bool = False) -> Estimate:
    """Bytes every stage, parameter and input of `request` will take (and its JSON text, if printed)."""
    sizes, inputs = ask_sizes(request)
    itemsize = ITEMSIZE.get(request.settings.dtype, 4)
    footprint = VARIANTS[request.settings.variant].footprint(sizes)
    if sizes.queries * sizes.keys > LAZY_CELLS:  # the score stages are streamed: a block of rows at a time
        footprint = footprint | {k: v for k, v in lazy_parts(sizes).items() if k in footprint}
    for part, numbers in modifier_parts(request.settings, sizes).items():  # a soft cap, q/k norms, the gate
        footprint[part] = footprint.get(part, 0) + numbers
    found = Estimate()
    found.add(N_("inputs"), inputs, itemsize)
    for part, numbers in footprint.items():
        # The score stages runs in at least float32 from the mask on.
        found.add(part, numbers, max(itemsize, 4) if part == "score stages" else itemsize)
    found.add(N_("working memory"), max(footprint.values(), default=0), max(itemsize, 4))  # checks, temporaries
    found.add(N_("stage records"), stage_count(request.settings.variant, sizes), STAGE_BYTES)
    if sizes.queries * sizes.keys <= LAZY_CELLS:  # a lazy mask is computed tile by tile
        found.add(N_("mask"), sizes.queries * sizes.keys, 1)
    if json_output:
        json_numbers(found, inputs + sum(footprint.values()))
    return found
