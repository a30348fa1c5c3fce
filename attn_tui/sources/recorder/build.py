"""Recognised calls → one Trace: places for every module, call, batch item and head; core ops for the inspector."""

from __future__ import annotations

import functools
import math
from dataclasses import replace

import torch

from attn_tui.ask.budget import BudgetError
from attn_tui.errors import AttnError
from attn_tui.i18n import N_, Msg, Plural
from attn_tui.sources.recorder import found as f
from attn_tui.sources.recorder.capture import Recorder
from attn_tui.sources.recorder.found import Found, Role
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.names import module_names, module_paths
from attn_tui.sources.recorder.node import Node, Scope, walk
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.meta import RecordedRun
from attn_tui.trace.ops import (
    Columns,
    Concat,
    Dot,
    Given,
    Linear,
    Masking,
    Op,
    Place,
    Reduce,
    Scale,
    SoftCap,
    Softmax,
    Sum,
    TanhOfPair,
    TanhOfSum,
    WeightedSum,
)
from attn_tui.trace.stage import Axis, Stage, Trace, dim_axis
from attn_tui.trace.steps import made_at_once, recorded_call
from attn_tui.trace.values import check_values


class NoAttentionError(AttnError):
    """The code ran, but computed no attention the recorder could lay out (an AttnError: one line, like the others)."""


def recognise(node: Node, found: Found) -> None:
    from attn_tui.sources.recorder.assemble import from_softmax
    from attn_tui.sources.recorder.expand import from_mha, from_sdpa

    if node.name == "flex_attention":
        from attn_tui.sources.recorder.hooks.flex_layout import from_flex

        from_flex(node, found)
    elif node.name == "scaled_dot_product_attention":
        from_sdpa(node, found)
    elif node.name == "multi_head_attention_forward":
        from_mha(node, found)
    else:
        from_softmax(node, found)


def _fallback(node: Node, scope: Scope) -> Found | None:
    """A softmax the recogniser could not lay out, shown as its scores and weights (None if even that fails)."""
    from attn_tui.sources.recorder.assemble import softmax_alone

    if node.kind is Kind.ATTENTION:
        return None
    found = Found(scope, node.call, 1, 1)
    try:
        softmax_alone(node, found)
    except Exception:  # the call is then only reported, never the user's code broken
        return None
    return found


def found_calls(recorder: Recorder, script: str = "") -> tuple[list[Found], list[str | Msg], dict[Scope, int]]:
    """Every kept call recognised, in the order the modules first ran; what could not be laid out, as warnings;
    how many kept calls of each module were left out as no attention (a classifier's softmax: logits.py).

    Under a budget (`trace --max-memory`), what the layout of the fused calls will allocate is counted
    before it is, beside what the kept calls hold already: BudgetError when the sum passes it.
    """
    from attn_tui.sources.recorder.heads import gather_heads
    from attn_tui.sources.recorder.held import laid_out_bytes, over_budget
    from attn_tui.sources.recorder.logits import NotAttentionError
    from attn_tui.sources.recorder.recognise import UnrecognisedError
    from attn_tui.sources.recorder.refs import UnfollowableError

    founds: list[Found] = []
    warnings: list[str | Msg] = []
    left_out: dict[Scope, int] = {}
    needed = recorder.kept_bytes
    for scope in recorder.order:
        for node in recorder.anchors[scope]:
            if recorder.budget is not None:
                needed += laid_out_bytes(node)
                if needed > recorder.budget:
                    raise over_budget(script, needed, recorder.budget)
            found = Found(scope, node.call, 1, 1)
            stale = [n for n in _reachable(node) if not n.is_view and n.stale()]
            if stale:
                warnings.append(Msg("{where}: the code changed a tensor in place after the attention used it; "
                                    "that call is left out", where=str(node.origin or scope.name)))
                continue
            try:
                recognise(node, found)
            except NotAttentionError:  # probabilities over a layer's outputs (logits.py): no attention to show
                left_out[scope] = left_out.get(scope, 0) + 1
                continue
            except Exception as exc:  # whatever the code did, the recording still shows what it can
                reason = str(exc) if isinstance(exc, (UnrecognisedError, UnfollowableError)) else type(exc).__name__
                plain = _fallback(node, scope)
                if plain is None:
                    warnings.append(Msg("{where}: an attention the recorder could not lay out ({reason})",
                                        where=str(node.origin or scope.name), reason=reason or type(exc).__name__))
                    continue
                warnings.append(Msg("{where}: only the scores and weights of this attention are shown: the recorder "
                                    "could not lay out the rest ({reason})", where=str(node.origin or scope.name),
                                    reason=reason or type(exc).__name__))
                found = plain
            founds.append(found)
            warnings.extend(found.warnings)
    return gather_heads(founds), warnings, left_out


def _reachable(node: Node, limit: int = 2000) -> list[Node]:
    return list(walk([node], limit=limit))


def _labels(count: int, given: tuple[str, ...] | None, prefix: str) -> tuple[str, ...]:
    if given is not None and len(given) == count:
        return given
    return _numbered(count, prefix)


_dim_axis = functools.lru_cache(maxsize=32)(dim_axis)  # an Axis is frozen: one per size serves every stage


@functools.lru_cache(maxsize=32)
def _numbered(count: int, prefix: str) -> tuple[str, ...]:
    """q0, q1, …: made once per length, not once per stage (a trace at 512 tokens has hundreds of axes)."""
    return tuple(f"{prefix}{i}" for i in range(count))


def build(recorder: Recorder, script: str = "", tokens: tuple[str, ...] | None = None,
          key_tokens: tuple[str, ...] | None = None) -> Trace:
    """The trace of everything the recorder kept; NoAttentionError when there is nothing to show.

    A failure of the recorder itself is a NoAttentionError too, with one line saying what failed:
    the user's notebook gets a message, not the recorder's traceback (it stays chained, for --debug).
    """
    from attn_tui.sources.recorder.refs import release

    try:
        return _build(recorder, script, tokens, key_tokens)
    except (NoAttentionError, BudgetError):
        raise
    except Exception as exc:
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise NoAttentionError(str(Msg("the recorder could not lay out what the code computed ({reason})",
                                       reason=" ".join(reason.split())[:160]))) from exc
    finally:
        release()


def _build(recorder: Recorder, script: str, tokens: tuple[str, ...] | None,
           key_tokens: tuple[str, ...] | None) -> Trace:
    founds, warnings, left_out = found_calls(recorder, script)
    unseen = _unseen_threads(recorder)
    if not founds:
        reason = (warnings[0] if warnings
                  else Msg("the recorder could not follow the code ({reason})", reason=type(recorder.failed).__name__)
                  if recorder.failed is not None  # the recorder lost track of the code: say so, not that nothing ran
                  else Msg("every softmax the code computed reads a layer's outputs (logits over classes or a "
                           "vocabulary), not scores of queries against keys")
                  if left_out  # every softmax it kept was left out as no attention (logits.py)
                  else Msg("no softmax, scaled_dot_product_attention, flex_attention or nn.MultiheadAttention was "
                           "called"))
        # the attention may have run in a thread the recording could not enter: named, so the user knows where
        raise NoAttentionError(str(reason if unseen is None else Msg("{reason}; {threads}", reason=reason,
                                                                     threads=unseen)))
    names = module_names(founds, module_paths(recorder, (found.scope for found in founds)))
    several = len(names) > 1
    scopes = list(names)
    steps_of = {scope: sum(x.batch for x in founds if x.scope == scope) for scope in scopes}
    first = founds[0]
    weights = first.role("weights").data
    q_labels = _labels(weights.shape[-2], tokens, "q")
    k_labels = _labels(weights.shape[-1], key_tokens or tokens, "k")
    heads = max(x.heads for x in founds)
    dtype = str(weights.dtype).replace("torch.", "")
    counted = {x.scope: x.counted_as or x.scope for x in founds}  # where each module's calls were counted
    calls = {s: recorder.seen[counted[s]] - left_out.get(counted[s], 0) for s in scopes}  # its attention's only
    kept = {s: len(recorder.anchors[counted[s]]) - left_out.get(counted[s], 0) for s in scopes}
    meta = RecordedRun(script=script, modules=tuple(names[s] for s in scopes), heads=heads,
                       calls=tuple(calls[s] for s in scopes), shown=tuple(kept[s] for s in scopes),
                       kinds=tuple(next(x.kind for x in founds if x.scope == s) for s in scopes),
                       steps=_step_names([x for x in founds if x.scope == scopes[0]]))
    trace = Trace(meta, q_labels, k_labels, str(weights.device), dtype)
    for given, count, what in ((tokens, weights.shape[-2], N_("queries")), (key_tokens, weights.shape[-1], N_("keys"))):
        if given is not None and len(given) != count:  # never dropped in silence: said, and q0, q1, … shown
            trace.warn(Msg("{n} labels were given for {count} {what}; they are numbered instead", n=len(given),
                           count=count, what=Msg(what)))
    next_step = dict.fromkeys(scopes, 0)
    for found in founds:
        module = names[found.scope] if several else None
        stepped = steps_of[found.scope] > 1
        keys = _param_keys(trace, found, module)
        for b in range(found.batch):
            step = next_step[found.scope] if stepped else None
            next_step[found.scope] += 1
            _add_slice(trace, found, b, step, module, keys, tokens, key_tokens)
    counting = [scope for scope in scopes if steps_of[scope] > 1]
    if counting:  # the steps are calls and batch items: named as the first module that has several counts them
        trace.step_axis = made_at_once([recorded_call(t, found.call, b, k_labels if t == 0 else ())
                              for t, (found, b) in enumerate((x, b) for x in founds if x.scope == counting[0]
                                                             for b in range(x.batch))])
    for scope in scopes:
        if calls[scope] > kept[scope]:
            warnings.append(Msg("{module} ran {n} times; the last {kept} calls are shown", module=names[scope],
                                n=calls[scope], kept=kept[scope]))
    if unseen is not None:  # a TorchFunctionMode cannot be entered in a thread from outside: said, never silent
        warnings.append(unseen)
    for warning in warnings:
        trace.warn(warning)
    if not all(_finite(found) for found in founds):
        check_values(trace)  # something is infinite or NaN: each stage's stats now, so the warnings name it
    return trace


def _unseen_threads(recorder: Recorder) -> Plural | None:
    """One line naming the threads that were running before the recording began (their attention unrecorded)."""
    unseen = recorder.threads.unseen if recorder.threads is not None else []
    if not unseen:
        return None
    return Plural("a thread was already running when the recording began, so attention it computed is not "
                  "recorded: {names}", "{n} threads were already running when the recording began, so attention "
                  "they computed is not recorded: {names}", n=len(unseen), names=", ".join(unseen))


def _finite(found: Found) -> bool:
    """Every number of every role finite (a masked role's hidden cells aside): one pass over each role for all its
    heads. Then nothing needs a warning, and each stage's stats wait until a view asks for them (`stats_of`):
    a long recording is not walked stage by stage before it is shown."""
    names = found.names()
    for role in found.roles:
        data = role.data
        if not isinstance(data, torch.Tensor) or not data.is_floating_point():
            continue  # integers, or a long flex call's lazy slices: their tiles' stats come as they are drawn
        if isinstance(role.op, f.MaskOp) and role.op.source in names and role.op.allowed is not None:
            continue  # the cells it keeps are its source's, checked already; the others hold the fill
        allowed = role.op.allowed if isinstance(role.op, f.MaskOp) else None
        if allowed is not None and allowed.shape == data.shape:
            data = data.masked_fill(~allowed.to(data.device), 0.0)
        # one reduction, no mask of its own: an infinity or NaN anywhere makes the sum one too (a sum that
        # overflows on finite numbers only sends the trace to the exact check, which then finds nothing)
        if not math.isfinite(float(data.sum(dtype=torch.promote_types(data.dtype, torch.float32)))):
            return False
    return True


def _param_keys(trace: Trace, found: Found, module: str | None) -> dict[str, str]:
    """Each parameter of a call under a key of the trace; a parameter that changed between calls
    (the code trained in between) gets a key of its own, so every call recomputes with its own numbers."""
    keys = {}
    for name, tensor in found.params.items():
        key = base = f"{module}.{name}" if module is not None else name
        n = 2
        while key in trace.params and not (trace.params[key].shape == tensor.shape
                                           and torch.equal(trace.params[key], tensor)):
            key = f"{base}@{n}"
            n += 1
        trace.params[key] = tensor
        keys[name] = key
    return keys


def _step_names(founds: list[Found]) -> tuple[str, ...]:
    out = []
    for found in founds:
        for b in range(found.batch):
            out.append(f"{found.call}:{b}")
    return tuple(out)


def _add_slice(trace: Trace, found: Found, b: int, step: int | None, module: str | None, keys: dict[str, str],
               tokens: tuple[str, ...] | None, key_tokens: tuple[str, ...] | None) -> None:
    heads = found.heads
    shared = {role.name for role in found.roles if role.shared}

    def place(name: str, h: int | None) -> Place:
        return Place(name, None, None if name in shared or heads == 1 else h, step, module)

    for role in found.roles:
        for h in [None] if role.shared else range(heads):
            data = role.data[b] if role.shared else role.data[b * heads + (h or 0)]
            at = place(role.name, h)
            axes = _axes(role, data, tokens, key_tokens)
            op = _op(role.op, b * heads + (h or 0), h, place, found, keys)
            trace.put(Stage(at, data, role.formula, axes, op, None if role.origin is None else str(role.origin)))
            if role.stats is not None:  # a lazy stage: its stats come from the pass that made it, never from whole
                trace.stats[at] = role.stats[b * heads + (h or 0)]


def _axes(role: Role, data: torch.Tensor, tokens: tuple[str, ...] | None,
          key_tokens: tuple[str, ...] | None) -> tuple[Axis, ...]:
    if role.labels is not None and len(role.labels) == data.dim():  # a tile map: blocks of queries and keys
        return tuple(Axis(kind, labels) for kind, labels in zip(role.axes, role.labels))
    out = []
    kinds = role.axes[-data.dim():] if data.dim() <= len(role.axes) else role.axes
    for kind, size in zip(kinds, data.shape):
        if kind == "query":
            out.append(Axis("query", _labels(size, tokens, "q")))
        elif kind == "key":
            out.append(Axis("key", _labels(size, key_tokens or tokens, "k")))
        elif kind == "token":
            out.append(Axis("token", _labels(size, tokens, "x")))
        elif kind == "hidden":
            out.append(_dim_axis(size, "hidden", "u"))
        else:
            out.append(_dim_axis(size))
    while len(out) < data.dim():
        out.append(_dim_axis(data.shape[len(out)]))
    return tuple(out)


def _fill_name(fill: float) -> str:
    if math.isinf(fill):
        return "-inf" if fill < 0 else "inf"
    if fill == -1e9:
        return "-1e9"
    return repr(fill)


def _told(op: f.MaskOp, allowed: torch.Tensor) -> MaskSpec | None:
    """The mask of one slice by its reasons, found once for every slice that shares its numbers (a broadcast mask)."""
    from attn_tui.sources.recorder.maskparts import by_parts, mask_key

    key = mask_key(allowed)
    if key not in op.told:
        op.told[key] = by_parts(allowed.bool())
    found = op.told[key]
    return found if isinstance(found, MaskSpec) else None


def _op(op: f.RoleOp, n: int, h: int | None, place: object, found: Found, keys: dict[str, str]) -> Op:
    at = place  # (name, head) → Place
    assert callable(at)

    def p(name: f.Param) -> str:
        return keys[name if isinstance(name, str) else name[n]]

    core = getattr(op, "core", None)
    if core is not None:  # an op that makes its own core op (flex_attention's, in hooks/flex_layout.py)
        return core(at, n, h, found.heads)  # type: ignore[no-any-return]
    if isinstance(op, f.GivenOp):
        return Given(str(op.what))
    if isinstance(op, f.LinearOp):
        return Linear(at(op.source, h), p(op.weight), None if op.bias is None else p(op.bias),
                      op.offsets[n] if n < len(op.offsets) else 0)
    if isinstance(op, f.ColumnsOp):
        return Columns(at(op.source, h), op.offsets[n])
    if isinstance(op, f.DotOp):
        return Dot(at(op.left, h), at(op.right, h))
    if isinstance(op, f.ScaleOp):
        return Scale(at(op.source, h), op.factor if isinstance(op.factor, float) else op.factor[n], str(op.reason))
    if isinstance(op, f.SoftCapOp):
        return SoftCap(at(op.source, h), op.cap)
    if isinstance(op, f.MaskOp):
        allowed = None if op.allowed is None else op.allowed[n]
        held = None if op.held is None else op.held[n].cpu()  # (L, S) the code's own mask, as it holds it
        told = _told(op, allowed) if op.parts and allowed is not None else None
        spec = None if allowed is None or (told is None and bool(allowed.all())) else MaskSpec(
            (int(allowed.shape[0]), int(allowed.shape[1])), dense=allowed.bool(), code_mask=held, code_rule=op.rule,
            code_fill=_fill_name(op.fill), code_test=op.test) if told is None else replace(
            told, code_mask=held, code_rule=op.rule, code_fill=_fill_name(op.fill), code_test=op.test)
        return Masking(at(op.source, h), spec, _fill_name(op.fill))
    if isinstance(op, f.SoftmaxOp):
        return Softmax(at(op.source, h))
    if isinstance(op, f.WeightedSumOp):
        return WeightedSum(at(op.weights, h), at(op.values, h))
    if isinstance(op, f.TanhOfSumOp):
        return TanhOfSum(at(op.left, h), at(op.right, h))
    if isinstance(op, f.TanhOfPairOp):
        return TanhOfPair(at(op.query, h), at(op.key, h), p(op.weight), None if op.bias is None else p(op.bias))
    if isinstance(op, f.ReduceOp):
        return Reduce(at(op.source, h), p(op.vector), None if op.bias is None else p(op.bias))
    if isinstance(op, f.ConcatOp):
        return Concat(tuple(at(op.part, head) for head in range(found.heads)))
    if isinstance(op, f.SumOp):
        return Sum(tuple(at(part, h) for part in op.parts))
    raise TypeError(type(op).__name__)
