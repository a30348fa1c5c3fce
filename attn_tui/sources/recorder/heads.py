"""Heads written as modules of their own, in a Python loop, gathered back into one attention with heads.

Lecture code builds multi-head attention as `torch.cat([h(x) for h in self.heads], dim=-1)`,
each head an nn.Module with its own query, key and value nn.Linear. Recorded one by one,
every head would be a module of the trace; the `cat` that puts their outputs side by side
says they are the heads of one attention. They become the head selector of the module
that ran the `cat`, followed by the concat and the projection after it, each head's
stages recomputed with its own parameters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.found import ConcatOp, Found, LinearOp, MaskOp, ReduceOp, Role, RoleOp, TanhOfPairOp
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node, Scope
from attn_tui.sources.recorder.operands import param_name, through_views
from attn_tui.sources.recorder.refs import UnfollowableError, resolve

PARAMS: dict[type, tuple[str, ...]] = {LinearOp: ("weight", "bias"), TanhOfPairOp: ("weight", "bias"),
                                       ReduceOp: ("vector", "bias")}


def gather_heads(founds: list[Found]) -> list[Found]:
    """`founds` with every group of one-head calls that one `cat` puts side by side made one call with heads."""
    out: list[Found] = []
    taken: set[int] = set()
    for found in founds:
        if id(found) in taken:
            continue
        group = _siblings(found, founds)
        merged = None if group is None else _merge(*group)
        if merged is None or group is None:
            out.append(found)
            continue
        taken.update(id(part) for part in group[1])
        out.append(merged)
    return out


def _siblings(found: Found, founds: list[Found]) -> tuple[Node, list[Found]] | None:
    """The `cat` that reads this call's output along its last dimension, and the calls it reads, in order."""
    if found.output is None or found.output.node is None or found.heads != 1:
        return None
    for cat in through_views(found.output.node):
        if cat.name != "cat" or not cat.inputs:
            continue
        parts = cat.inputs[0] if isinstance(cat.inputs[0], tuple) else ()
        dim = cat.kwargs.get("dim", cat.inputs[1] if len(cat.inputs) > 1 else 0)
        if len(parts) < 2 or not isinstance(dim, int) or dim % cat.value.dim() != cat.value.dim() - 1:
            continue
        matched = [_owner(part, founds) for part in parts]
        if all(m is not None for m in matched) and len({id(m) for m in matched}) == len(matched):
            return cat, [m for m in matched if m is not None]
    return None


def _owner(part: Any, founds: list[Found]) -> Found | None:
    """The one-head call whose whole output `part` is."""
    if not isinstance(part, Node):
        return None
    try:
        ref = resolve(part)
    except UnfollowableError:
        return None
    for found in founds:
        out = found.output
        if out is None or found.heads != 1 or out.node is not ref.node or out.index.numel() != ref.index.numel():
            continue
        if torch.equal(out.index.reshape(-1), ref.index.reshape(-1)):
            return found
    return None


def _prefix(parent: Any, child: Any, h: int) -> str:
    """A head module's path in the module that ran the cat (`heads.0.`), so its parameters keep their own names."""
    if parent is not None and child is not None:
        for name, module in parent.named_modules():
            if module is child and name:
                return f"{name}."
    return f"head{h}."


def _merge(cat: Node, parts: list[Found]) -> Found | None:
    first = parts[0]
    batch, heads = first.batch, len(parts)
    names = [role.name for role in first.roles]
    if any([r.name for r in p.roles] != names or p.batch != batch for p in parts):
        return None
    if cat.scope is None or any(p.scope == cat.scope for p in parts):
        return None
    scope: Scope = cat.scope
    prefixes = [_prefix(scope.module, p.scope.module, h) for h, p in enumerate(parts)]
    merged = Found(scope, first.call, batch, heads, kind="multihead", counted_as=first.scope)
    for prefix, part in zip(prefixes, parts):
        merged.params.update({prefix + name: tensor for name, tensor in part.params.items()})
    for i in range(len(names)):
        roles = [p.roles[i] for p in parts]
        if any(r.data.shape != roles[0].data.shape for r in roles):
            return None
        op = _merge_op([r.op for r in roles], prefixes, batch)
        if op is None:
            return None
        same = all(r.shared for r in roles) and all(torch.equal(r.data, roles[0].data) for r in roles)
        data = roles[0].data if same else torch.stack([r.data for r in roles], 1).reshape(
            batch * heads, *roles[0].data.shape[1:])
        merged.add(Role(roles[0].name, data, op, roles[0].origin, roles[0].formula, roles[0].axes, shared=same))
    _concat_and_project(merged, cat)
    return merged


def _merge_op(ops: list[RoleOp], prefixes: list[str], batch: int) -> RoleOp | None:
    """One op for every slice (n = b * heads + h): per-head parameter names and offsets, interleaved."""
    kind = type(ops[0])
    if any(type(op) is not kind for op in ops):
        return None
    heads = len(ops)
    changes: dict[str, Any] = {}
    for field in dataclasses.fields(kind):
        values = [getattr(op, field.name) for op in ops]
        if field.name in PARAMS.get(kind, ()):
            if all(v is None for v in values):
                continue
            if not all(isinstance(v, str) for v in values):
                return None
            changes[field.name] = tuple(prefixes[h] + values[h] for _ in range(batch) for h in range(heads))
        elif field.name == "offsets" or (field.name == "factor" and any(v != values[0] for v in values)):
            per = [v if isinstance(v, tuple) else (v,) * batch for v in values]  # one per batch item of each head
            changes[field.name] = tuple(per[h][b] for b in range(batch) for h in range(heads))
        elif kind is MaskOp and field.name in ("allowed", "held"):
            if all(v is None for v in values) and field.name == "held":
                continue
            if any(v is None for v in values) or any(v.dtype != values[0].dtype for v in values):
                return None
            changes[field.name] = torch.stack(values, 1).reshape(batch * heads, *values[0].shape[1:])
        elif any(v != values[0] for v in values):
            return None
    return dataclasses.replace(ops[0], **changes)


def _concat_and_project(found: Found, cat: Node) -> None:
    """The cat itself as `concat`, and the projection that reads it whole as `projected`."""
    width = cat.value.shape[-1]
    concat = cat.value.reshape(found.batch, -1, width)  # (B, L, H·dv)
    found.add(Role("concat", concat, ConcatOp("output"), cat.origin,
                   Msg("C = [O_0 | O_1 | … ]: every head's output side by side"), ("query", "dim"), shared=True))
    for linear in through_views(cat):
        if linear.kind is not Kind.LINEAR or not isinstance(linear.inputs[0], Node) or len(linear.inputs) < 2:
            continue
        try:
            x = resolve(linear.inputs[0])
        except UnfollowableError:
            continue
        if x.node is not cat or not torch.equal(x.index.reshape(-1), torch.arange(cat.value.numel())):
            continue
        weight_node = linear.inputs[1] if isinstance(linear.inputs[1], Node) else None
        bias_node = linear.inputs[2] if len(linear.inputs) > 2 and isinstance(linear.inputs[2], Node) else None
        weight, bias = param_name(found, weight_node, "W_o"), param_name(found, bias_node, "b_o")
        if weight is None:
            return
        formula = Msg("Y = {source}·{weight}ᵀ", source="concat", weight=weight) if bias is None else \
            Msg("Y = {source}·{weight}ᵀ + {bias}", source="concat", weight=weight, bias=bias)
        projected = linear.value.reshape(found.batch, -1, linear.value.shape[-1])
        found.add(Role("projected", projected, LinearOp("concat", weight, bias, (0,) * (found.batch * found.heads)),
                       linear.origin, formula, ("query", "dim"), shared=True))
        return
