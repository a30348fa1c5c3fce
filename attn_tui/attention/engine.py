"""`compute(request) -> Trace`: inputs become stages, a variant adds its own, checks add warnings."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import torch

from attn_tui.ask.budget import memory_limit
from attn_tui.ask.footprint import LAZY_CELLS, estimate
from attn_tui.ask.inputs import PAD_TOKEN, check_qkv_shapes, tokenize
from attn_tui.ask.settings import DEFAULT_DIM, MatrixInput, SentenceInput, Settings, VariantAsk, XInput
from attn_tui.ask.variants import VARIANTS
from attn_tui.attention import positional
from attn_tui.attention.attend import PreStage, Tail, score_stages
from attn_tui.attention.device import resolve_device, resolve_dtype
from attn_tui.attention.params import ParamFactory
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import Msg
from attn_tui.trace import masks
from attn_tui.trace.geometry import HeadGeometry, LayerGeometry, Positional
from attn_tui.trace.lazy import PreTile
from attn_tui.trace.meta import VariantRun
from attn_tui.trace.ops import Columns, Given, Identity, Linear, Lookup, Op, Operand, Place, Sinusoid, Sum
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis
from attn_tui.trace.values import check_values


@dataclass
class Context:
    """What a variant needs besides Q, K, V: where to record, what to learn, how the tail masks."""

    trace: Trace
    meta: VariantRun  # what the trace is a run of; `describe` keeps the trace's copy the same
    params: ParamFactory
    tail: Tail
    hidden: int | None  # attention hidden size for additive/concat
    source: Operand  # what the projections read: a stage (embedding, embedded_pos) or the input "X"
    lazy: bool  # the score stages are read by tiles (a long input), never held whole
    positions: Positional = field(default_factory=Positional)  # how positions entered the input (sinusoidal: absolute)

    @property
    def settings(self) -> Settings:
        return self.meta.settings

    def describe(self, heads: int, kv_heads: int = 0, kv_map: tuple[int, ...] = ()) -> None:
        """The run's heads (and a grouped-query run's key/value heads) as the variant split them."""
        self.meta = replace(self.meta, heads=heads, kv_heads=kv_heads, kv_map=kv_map)
        self.trace.meta = self.meta

    @property
    def query_axis(self) -> Axis:
        return self.tail.query_axis

    @property
    def key_axis(self) -> Axis:
        return self.tail.key_axis

    @property
    def qk_axes(self) -> tuple[Axis, Axis]:
        return self.tail.query_axis, self.tail.key_axis

    def record_geometry(self, scale: float, positional: Positional | None = None,
                        heads: tuple[HeadGeometry, ...] = (), sink: bool = False) -> None:
        """The run's one layer as a LayerGeometry (trace.geometry[0]), so a variant answers `geometry_of(0)` as a
        model's layer does: the mask as the settings drew it, how positions enter (the input's sinusoids unless
        the variant turns or biases by position itself), `scale`, the variant's factor on q·k (1 where nothing
        scales it), and the temperature that divides every score before the softmax."""
        s = self.settings
        mask = self.tail.mask
        window = mask.window if mask is not None else None
        kind = ("sliding" if window is not None else "causal" if "causal" in s.mask
                else "custom" if mask is not None and mask.custom is not None else "full")
        self.trace.geometry[0] = LayerGeometry(kind, window, positional or self.positions, scale, s.softcap,
                                               heads=heads, temperature=s.temperature, sink=sink)

    def scores(self, pre: PreTile, stages: list[PreStage], last: str) -> torch.Tensor:
        """A single-head variant's score stages from `pre`, then the shared tail on the values; the output."""
        values = self.trace.tensor("value")[None]  # (1, S, d_v)
        return score_stages(self.trace, self.tail, pre, stages, last, values, [Place("scores")], [Place("value")],
                            self.lazy)[0]


def compute(request: VariantAsk, max_memory: int | None = None, lazy: bool | None = None) -> Trace:
    """Run one request through its variant and return the full trace (never NaN silently).

    The request's memory is estimated and checked against the limit before any tensor
    exists (`max_memory` bytes, else the default share of what the machine has free).
    `lazy` None keeps the score stages lazy exactly when they have more than LAZY_CELLS cells.
    """
    s = request.settings
    estimate(request).check(memory_limit(max_memory), Msg("this request"))  # checks every field's type first
    if not math.isfinite(s.temperature) or s.temperature <= 0:
        raise ConfigError(Msg("temperature must be a positive number, not {t}", t=f"{s.temperature:g}"))
    device, dtype = resolve_device(s.device), resolve_dtype(s.dtype)
    trace = Trace(VariantRun(settings=s), (), (), str(device), s.dtype)
    params = ParamFactory(s.seed, dtype, device, trace.params)
    with torch.no_grad():
        _run(request, trace, params, device, dtype, lazy)
    check_values(trace)
    return trace


def _run(request: VariantAsk, trace: Trace, params: ParamFactory, device: torch.device, dtype: torch.dtype,
         lazy: bool | None) -> None:
    s = request.settings
    variant = VARIANTS[s.variant]
    source = request.source
    read = source.read(_Reader(trace, params, s, dtype, device))
    x, x_source = read.x, read.x_source
    if x is not None and s.positional:
        x, x_source = _add_positional(trace, x, x_source, read.q_tokens)
    q_tokens, k_tokens = read.q_tokens, read.k_tokens
    trace.query_tokens, trace.key_tokens = q_tokens, k_tokens
    custom = masks.custom_mask(request.custom_mask, s.mask_means) if request.custom_mask is not None else None
    mask = masks.build_mask(s.mask, k_tokens, len(q_tokens), s.pad_keys, custom, device, s.window, s.mask_means)
    if mask is not None and mask.custom is not None and request.mask_by_hand:
        mask = replace(mask, by_hand=True)
    trace.mask = mask
    if custom is not None and s.mask_means == "attend" and 0 < int(custom.sum()) < custom.numel() / 2:
        trace.warn(Msg("the custom mask blocks more cells than it lets through (1 = may attend): if its 1s mark "
                       "padding, as some notes write masks, use --mask-means block"))
    if s.mask != "none" and mask is None and custom is None:
        trace.warn(Msg("the {mask} mask masks nothing here (no <pad> keys, no --pad-keys)", mask=s.mask)
                   if "padding" in s.mask and "causal" not in s.mask
                   else Msg("the {mask} mask masks nothing here", mask=s.mask))
    if (meaningless := masks.shape_meaningless(s.mask, len(q_tokens), len(k_tokens))) is not None:
        trace.warn(meaningless)
    tail = Tail(Axis("query", q_tokens), Axis("key", k_tokens), mask, s.mask_fill, s.temperature)
    if lazy is None:
        lazy = len(q_tokens) * len(k_tokens) > LAZY_CELLS
    meta = VariantRun(settings=s, vocab=read.vocab)
    trace.meta = meta
    ctx = Context(trace, meta, params, tail, s.dim, x_source, lazy,
                  Positional("absolute") if x_source == Place("embedded_pos") else Positional())
    if variant.takes_x:
        variant.run(ctx, trace.operand(x_source), s.heads)
        return
    heads = s.heads if variant.per_head else 1
    d = 0
    if x is not None:
        d = x.shape[1]
        if s.projection == "identity":
            given = {name: x for name in ("query", "key", "value")}  # (N, d): Q = K = V = X
        else:
            given = {name: x @ params.weight(f"W_{name[0]}", d, d).T for name in ("query", "key", "value")}  # (N, d)
            if s.bias:
                given = {name: projected + params.bias(f"b_{name[0]}", d, d) for name, projected in given.items()}
    else:
        assert read.qkv is not None  # typed matrices: no X, their own Q, K, V
        given = dict(zip(("query", "key", "value"), read.qkv))
    if heads > 1:
        _split_heads(ctx, given, heads, source.typed)
        return
    for name, axis in (("query", tail.query_axis), ("key", tail.key_axis), ("value", tail.key_axis)):
        letter, tensor = name[0].upper(), given[name]
        if source.typed:
            what = Msg("typed: one row per query") if name == "query" else Msg("typed: one row per key")
            trace.add(Stage(Place(name), tensor, Msg("{letter}: {what}", letter=letter, what=what),
                            (axis, dim_axis(tensor.shape[1])), Given(what)))
        elif s.projection == "identity":
            trace.add(Stage(Place(name), tensor, Msg("{letter} = X: the identity projection, nothing learned",
                                                     letter=letter), (axis, dim_axis(d)), Identity(x_source)))
        else:
            weight, bias = f"W_{name[0]}", f"b_{name[0]}" if s.bias else None
            trace.add(Stage(Place(name), tensor, f"{letter} = X·{weight}ᵀ" + (f" + {bias}" if bias else ""),
                            (axis, dim_axis(d)), Linear(x_source, weight, bias)))
    variant.run(ctx, *(trace.tensor(n) for n in ("query", "key", "value")))


@dataclass
class _Read:
    """An input as tensors: typed Q, K, V (`qkv`), or token vectors X and the stage (or input) they are."""

    q_tokens: tuple[str, ...]
    k_tokens: tuple[str, ...]
    qkv: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # each (rows, width)
    x: torch.Tensor | None = None  # (N, d_model)
    x_source: Operand = "X"
    vocab: tuple[str, ...] = ()  # a sentence's distinct tokens, in table order


class _Reader:
    """Each kind of input into tensors (and its first stages), through `source.read(reader)`."""

    def __init__(self, trace: Trace, params: ParamFactory, settings: Settings, dtype: torch.dtype,
                 device: torch.device) -> None:
        self.trace, self.params, self.settings, self.dtype, self.device = trace, params, settings, dtype, device

    def matrices(self, source: MatrixInput) -> _Read:
        s = self.settings
        variant = VARIANTS[s.variant]
        if variant.takes_x:
            raise InputError(Msg("{variant} projects Q, K and V itself: give one X matrix (--x) or a sentence",
                                 variant=s.variant))
        q, k, v = (_tensor(m, self.dtype, self.device, name)
                   for m, name in ((source.q, "Q"), (source.k, "K"), (source.v, "V")))
        check_qkv_shapes((q.shape[0], q.shape[1]), (k.shape[0], k.shape[1]), (v.shape[0], v.shape[1]),
                         variant.same_width)
        q_tokens = _labels(source.query_tokens, q.shape[0], "q")
        k_tokens = _labels(source.key_tokens, k.shape[0], "k")
        self.trace.inputs = {"Q": q, "K": k, "V": v}
        return _Read(q_tokens, k_tokens, qkv=(q, k, v))

    def sentence(self, source: SentenceInput) -> _Read:
        tokens = tuple(tokenize(source.text))
        x, x_source, vocab = _embed(self.trace, self.params, tokens, self.settings.dim or DEFAULT_DIM, self.dtype,
                                    self.device)
        return _Read(tokens, tokens, x=x, x_source=x_source, vocab=vocab)

    def x(self, source: XInput) -> _Read:
        x = _tensor(source.x, self.dtype, self.device, "X")  # (N, d_model)
        tokens = _labels(source.tokens, x.shape[0], "x")
        self.trace.inputs = {"X": x}
        return _Read(tokens, tokens, x=x)


def _split_heads(ctx: Context, given: dict[str, torch.Tensor], heads: int, typed: bool) -> None:
    """Q, K and V cut into `heads` heads by columns (head h owns columns h·d_h … (h+1)·d_h − 1), as
    `tensor.view(n, heads, d_h)` cuts them; each head's query, key and value is a stage of its own."""
    trace = ctx.trace
    for name, tensor in given.items():
        if tensor.shape[1] % heads:
            letter = name[0].upper()
            raise ConfigError(Msg("--heads {heads} does not divide the width {width} of {letter}: each head takes an "
                                  "equal share of the columns", heads=heads, width=tensor.shape[1], letter=letter))
    ctx.describe(heads)
    split = {}
    for name, tensor in given.items():
        n, width = tensor.shape
        d_h = width // heads
        split[name] = tensor.view(n, heads, d_h).transpose(0, 1)  # (heads, n, d_h): views, no copies
        axis = ctx.query_axis if name == "query" else ctx.key_axis
        letter = name[0].upper()
        for h in range(heads):
            span = f"{h * d_h}…{(h + 1) * d_h - 1}"
            op: Op
            if typed:
                op = Columns(letter, h * d_h)
                formula = Msg("{letter}_{h} = {letter}[:, {span}]: head {h}'s columns of the typed {letter}",
                              letter=letter, h=h, span=span)
            elif ctx.settings.projection == "identity":
                op = Columns(ctx.source, h * d_h)
                formula = Msg("{letter}_{h} = X[:, {span}]: head {h}'s columns of X (the identity projection)",
                              letter=letter, h=h, span=span)
            else:
                bias = f"b_{name[0]}" if ctx.settings.bias else None
                op = Linear(ctx.source, f"W_{name[0]}", bias, offset=h * d_h)
                formula = Msg("{letter}_{h} = X·W_{lower}ᵀ{plus}, columns {span}: head {h}'s share", letter=letter,
                              h=h, span=span, lower=name[0], plus=f" + {bias}" if bias else "")
            trace.add(Stage(Place(name, head=h), split[name][h], formula, (axis, dim_axis(d_h)), op))
    VARIANTS[ctx.settings.variant].run(ctx, split["query"], split["key"], split["value"])


def _tensor(rows: list[list[float]], dtype: torch.dtype, device: torch.device, name: str) -> torch.Tensor:
    """A typed matrix in the chosen dtype; a number the dtype cannot hold is an error, not a silent inf."""
    given = torch.tensor(rows, dtype=torch.float64)
    bad = torch.nonzero(~torch.isfinite(given))
    if len(bad):  # NaN or ±inf as given (the API and a session pass numbers, not text the parser read)
        row, column = (int(i) for i in bad[0])
        raise InputError(Msg("{name} holds {value} at row {row}, column {column}: every number must be finite",
                             name=name, value=str(float(given[row, column])), row=row + 1, column=column + 1))
    tensor = given.to(dtype=dtype, device=device)
    if not bool(torch.isfinite(tensor).all()):
        limit = torch.finfo(dtype).max
        raise InputError(Msg("{name} holds a number beyond {dtype}'s range (largest {limit}): choose a wider --dtype, "
                             "such as float64", name=name, dtype=str(dtype).replace("torch.", ""),
                             limit=f"{limit:.4g}"))
    return tensor


def _labels(given: tuple[str, ...] | None, n: int, prefix: str) -> tuple[str, ...]:
    """The typed row names, or `prefix` + index; names given for other rows than typed are an error."""
    if given is None:
        return tuple(f"{prefix}{i}" for i in range(n))
    if len(given) != n:
        raise InputError(Msg("{given} names given for {n} rows", given=len(given), n=n))
    return tuple(given)


def _embed(trace: Trace, params: ParamFactory, tokens: tuple[str, ...], dim: int, dtype: torch.dtype,
           device: torch.device) -> tuple[torch.Tensor, Place, tuple[str, ...]]:
    """Sentence → X (L, dim): one seeded table row per distinct token."""
    index = {token: n for n, token in enumerate(dict.fromkeys(tokens))}  # token → row, in first-seen order
    table = params.token_rows(list(index), dim, PAD_TOKEN)  # (V, dim)
    rows = tuple(index[t] for t in tokens)
    x = torch.nn.functional.embedding(torch.tensor(rows, device=device), table)  # (L, dim)
    place = Place("embedding")
    trace.add(Stage(place, x, Msg("X = Embedding(tokens): one seeded row per distinct token"),
                    (Axis("token", tokens), dim_axis(dim)), Lookup("embedding", rows)))
    return x, place, tuple(index)


def _add_positional(trace: Trace, x: torch.Tensor, source: Operand,
                    tokens: tuple[str, ...]) -> tuple[torch.Tensor, Place]:
    pe = positional.sinusoidal(x.shape[0], x.shape[1], x.dtype, x.device)  # (L, d)
    dims = dim_axis(x.shape[1])
    trace.add(Stage(Place("positional"), pe, positional.FORMULA,
                    (Axis("position", tuple(map(str, range(len(tokens))))), dims), Sinusoid()))
    if isinstance(source, str):  # typed X: record it as a stage so the sum can name both parts
        trace.add(Stage(Place("embedding"), x, Msg("X: typed, one row per token"), (Axis("token", tokens), dims),
                        Given(Msg("typed: one row per token"))))
        source = Place("embedding")
    place = Place("embedded_pos")
    trace.add(Stage(place, x + pe, "X = Embedding(tokens) + PE", (Axis("token", tokens), dims),
                    Sum((source, Place("positional")))))
    return trace.stages[place].tensor, place
