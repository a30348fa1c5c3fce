"""`compute(request) -> Trace`: inputs become stages, a variant adds its own, checks add warnings."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch

from attn_tui.core import masks, positional
from attn_tui.core.budget import memory_limit
from attn_tui.core.device import resolve_device, resolve_dtype
from attn_tui.core.errors import ConfigError, InputError
from attn_tui.core.footprint import estimate
from attn_tui.core.inputs import PAD_TOKEN, check_qkv_shapes, tokenize
from attn_tui.core.params import ParamFactory
from attn_tui.core.settings import DEFAULT_DIM, MatrixInput, Request, SentenceInput
from attn_tui.core.stage import Axis, Stage, Trace, dim_axis
from attn_tui.core.variants import VARIANTS, Variant


@dataclass
class Context:
    """What a variant needs besides Q, K, V: where to record, how to mask, what to learn."""

    trace: Trace
    params: ParamFactory
    mask: torch.Tensor | None  # (L, S) bool, True = may attend
    fill: str
    temperature: float
    hidden: int | None  # attention hidden size for additive/concat
    query_axis: Axis
    key_axis: Axis

    def attend(self, scores: torch.Tensor, value: torch.Tensor, source: str,
               head: int | None = None) -> torch.Tensor:
        """The tail every variant shares: masked → weights → output. Returns the output.

        `source` is the symbol of the incoming scores in the formulas (S or S').
        """
        qk = (self.query_axis, self.key_axis)
        scaled = f"{source} / T (T = {self.temperature:g})" if self.temperature != 1 else source
        if self.mask is None:
            masked_formula = f"M = {scaled}   (no mask)"
        else:
            masked_formula = (f"M = {scaled} where mask = 1, {self.fill.replace('inf', '∞')} where mask = 0"
                              "   (mask: 1 = may attend)")
        promoted = scores.to(masks.softmax_dtype(scores.dtype))
        divided = promoted / self.temperature if self.temperature != 1 else promoted
        masked = self.trace.add(Stage("masked", masks.apply_mask(divided, self.mask, self.fill),
                                      masked_formula, qk, head))
        weights = self.trace.add(Stage("weights", masks.masked_softmax(masked, self.mask),
                                       "A = softmax(M) over keys: each row sums to 1", qk, head))
        out_axes = (self.query_axis, dim_axis(value.shape[-1]))
        output = weights.to(value.dtype) @ value  # (L, d_v)
        return self.trace.add(Stage("output", output, "O = A·V: each row is a weighted sum of value rows",
                                    out_axes, head))


def compute(request: Request, max_memory: int | None = None) -> Trace:
    """Run one request through its variant and return the full trace (never NaN silently).

    The request's memory is estimated and checked against the limit before any tensor
    exists (`max_memory` bytes, else the default share of what the machine has free).
    """
    s = request.settings
    if not math.isfinite(s.temperature) or s.temperature <= 0:
        raise ConfigError(f"temperature must be a positive number, not {s.temperature:g}")
    estimate(request).check(memory_limit(max_memory), "this request")
    variant = VARIANTS[s.variant]
    device, dtype = resolve_device(s.device), resolve_dtype(s.dtype)
    trace = Trace(variant=s.variant, query_tokens=(), key_tokens=(), device=str(device),
                  dtype=s.dtype, config=asdict(s))
    params = ParamFactory(s.seed, dtype, device, trace.params)
    with torch.no_grad():
        _run(request, variant, trace, params, device, dtype)
    _check_values(trace, s.temperature)
    return trace


def _run(request: Request, variant: Variant, trace: Trace, params: ParamFactory,
         device: torch.device, dtype: torch.dtype) -> None:
    s = request.settings
    source = request.source
    if isinstance(source, MatrixInput):
        if variant.takes_x:
            raise InputError("multihead projects Q, K and V itself: give one X matrix (--x) or a sentence")
        q, k, v = (_tensor(m, dtype, device) for m in (source.q, source.k, source.v))
        check_qkv_shapes(tuple(q.shape), tuple(k.shape), tuple(v.shape), variant.same_width)
        q_tokens = _labels(source.query_tokens, q.shape[0], "q", "query tokens")
        k_tokens = _labels(source.key_tokens, k.shape[0], "k", "key tokens")
        trace.inputs = {"Q": q, "K": k, "V": v}
        x = None
    else:
        if isinstance(source, SentenceInput):
            tokens = tokenize(source.text)
            x = _embed(trace, params, tokens, s.dim or DEFAULT_DIM, s.positional, dtype, device)
        else:
            x = _tensor(source.x, dtype, device)  # (N, d_model)
            tokens = list(_labels(source.tokens, x.shape[0], "x", "tokens"))
            trace.inputs = {"X": x}
            if s.positional:
                x = _add_positional(trace, x, tuple(tokens))
        q_tokens = k_tokens = tuple(tokens)
        q = k = v = None
    trace.query_tokens, trace.key_tokens = q_tokens, k_tokens
    custom = masks.custom_mask(request.custom_mask) if request.custom_mask is not None else None
    mask = trace.mask = masks.build_mask(s.mask, k_tokens, len(q_tokens), s.pad_keys, custom, device)
    if s.mask != "none" and mask is None and custom is None:
        trace.warn(f"the {s.mask} mask masks nothing here (no <pad> keys, no --pad-keys)"
                   if "padding" in s.mask and "causal" not in s.mask else f"the {s.mask} mask masks nothing here")
    if s.pad_keys and "padding" not in s.mask:
        trace.warn(f"--pad-keys {s.pad_keys} has no effect: the mask is {s.mask!r} (use mask padding)")
    for row in masks.fully_masked_rows(mask):
        effect = ("its weights and output are zeros" if s.mask_fill == "-inf"
                  else "its weights are uniform over all keys")
        trace.warn(f"query {q_tokens[row]!r} (row {row}) may attend to no key: with fill {s.mask_fill} {effect}")
    q_axis, k_axis = Axis("query", q_tokens), Axis("key", k_tokens)
    ctx = Context(trace, params, mask, s.mask_fill, s.temperature, s.dim, q_axis, k_axis)
    if variant.takes_x:
        variant.run(ctx, x, s.heads)
        return
    if q is None:
        d = x.shape[1]
        q = x @ params.weight("W_q", d, d).T
        k = x @ params.weight("W_k", d, d).T
        v = x @ params.weight("W_v", d, d).T
        formulas = ("Q = X·W_qᵀ", "K = X·W_kᵀ", "V = X·W_vᵀ")
    else:
        formulas = ("Q: typed, one row per query", "K: typed, one row per key", "V: typed, one row per key")
    trace.add(Stage("query", q, formulas[0], (q_axis, dim_axis(q.shape[1]))))
    trace.add(Stage("key", k, formulas[1], (k_axis, dim_axis(k.shape[1]))))
    trace.add(Stage("value", v, formulas[2], (k_axis, dim_axis(v.shape[1]))))
    variant.run(ctx, q, k, v)


def _tensor(rows: list[list[float]], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    return torch.tensor(rows, dtype=torch.float64).to(dtype=dtype, device=device)


def _labels(given: tuple[str, ...] | None, n: int, prefix: str, what: str) -> tuple[str, ...]:
    if given is None:
        return tuple(f"{prefix}{i}" for i in range(n))
    if len(given) != n:
        raise InputError(f"{len(given)} {what} given for {n} rows")
    return tuple(given)


def _embed(trace: Trace, params: ParamFactory, tokens: list[str], dim: int, use_pe: bool,
           dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """Sentence → X (L, dim): seeded embedding, plus sinusoidal PE when asked."""
    index = {token: n for n, token in enumerate(dict.fromkeys(tokens))}  # token → row, in first-seen order
    vocab = list(index)
    table = params.token_rows(vocab, dim, PAD_TOKEN)  # (V, dim)
    trace.config["vocab"] = vocab
    ids = torch.tensor([index[t] for t in tokens], device=device)
    x = torch.nn.functional.embedding(ids, table)  # (L, dim)
    token_axis = Axis("token", tuple(tokens))
    trace.add(Stage("embedding", x, "X = Embedding(tokens): one seeded row per distinct token",
                    (token_axis, dim_axis(dim))))
    return _add_positional(trace, x, tuple(tokens)) if use_pe else x


def _add_positional(trace: Trace, x: torch.Tensor, tokens: tuple[str, ...]) -> torch.Tensor:
    pe = positional.sinusoidal(x.shape[0], x.shape[1], x.dtype, x.device)  # (L, d)
    axes = (Axis("token", tokens), dim_axis(x.shape[1]))
    trace.add(Stage("positional", pe, positional.FORMULA, (Axis("position", tuple(map(str, range(len(tokens))))), axes[1])))
    return trace.add(Stage("embedded_pos", x + pe, "X = Embedding(tokens) + PE", axes))


def _check_values(trace: Trace, temperature: float = 1.0) -> None:
    """Report non-finite values, naming the stage and the cause (never a silent inf or NaN).

    One `isfinite` pass per stage in the common case; the counting and the reasons are
    only worked out for a stage that holds something non-finite.
    """
    overflowed: str | None = None  # the first stage that went infinite, blamed for later NaN
    for stage in trace.stages:
        t = stage.tensor
        if not t.is_floating_point():
            continue
        if stage.name == "masked" and temperature != 1:
            _check_temperature(trace, stage, temperature)
        if bool(torch.isfinite(t).all()):
            continue
        nan = int(torch.isnan(t).sum())
        inf = torch.isinf(t)
        if stage.name == "masked" and trace.mask is not None:
            inf = inf & trace.mask.to(inf.device)  # a masked -inf is the fill, not an overflow
        n_inf = int(inf.sum())
        if n_inf:
            limit = torch.finfo(t.dtype).max
            cause = (f"dividing by the temperature {temperature:g} overflowed {t.dtype}" if stage.name == "masked"
                     and temperature != 1 else f"{t.dtype} overflowed (its largest finite value is {limit:.4g})")
            trace.warn(f"stage {stage.key} has {n_inf} infinite value{'s' * (n_inf != 1)}: {cause}")
            overflowed = overflowed or stage.key
        if nan:
            cause = (f"they follow from the infinite values of stage {overflowed}" if overflowed
                     else "an undefined operation such as ∞ − ∞ or 0·∞")
            trace.warn(f"stage {stage.key} has {nan} NaN value{'s' * (nan != 1)}: {cause}")


def _check_temperature(trace: Trace, masked: Stage, temperature: float) -> None:
    """A huge temperature can flush every score to 0: say so rather than show uniform weights as meaningful."""
    allowed = masked.tensor if trace.mask is None else masked.tensor[trace.mask.to(masked.tensor.device)]
    if allowed.numel() and bool((allowed == 0).all()):
        pre = next(s for s in reversed(trace.stages[: trace.stages.index(masked)]) if s.name in ("scaled", "scores")
                   and s.head == masked.head)
        if bool((pre.tensor != 0).any()):
            trace.warn(f"stage {masked.key}: dividing by the temperature {temperature:g} underflowed every score "
                       "to 0, so the weights are uniform")
