"""Where a query, key or value came from: a projection's columns, a fused qkv's slice, or given as is.

Works on Refs laid out per slice, `(n, rows, width)`: for each it asks whether the
numbers are the columns `offset … offset + width` of some rows of one nn.Linear's output
(the same rows for every column), which is what `self.W_q(x)`, a fused
`qkv_proj(x).reshape(…).permute(…)` and a head split all come to. It also finds what
the code did with the output afterwards: heads put side by side, then a projection.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.found import ColumnsOp, ConcatOp, Found, GivenOp, LinearOp, Role, ScaleOp
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.refs import Ref, UnfollowableError, joined, operand_ref, resolve


def scalar(value: object) -> float | None:
    """A Python number, or a tensor holding one number; None otherwise."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, Node) and value.value.numel() == 1 and value.value.is_floating_point():
        return float(value.value.reshape(-1)[0])
    if isinstance(value, Node) and value.value.numel() == 1:
        return float(value.value.reshape(-1)[0])
    return None


def scale_of(node: Node) -> tuple[Node, float] | None:
    """`x * c`, `c * x`, `x / c` with c a number: (x, the factor)."""
    if node.kind is not Kind.SCALE or len(node.inputs) < 2:
        return None
    a, b = node.inputs[0], node.inputs[1]
    if node.name == "div":
        c = scalar(b)
        return (a, 1.0 / c) if isinstance(a, Node) and c is not None and c != 0.0 else None
    for x, c in ((a, scalar(b)), (b, scalar(a))):
        if isinstance(x, Node) and c is not None and x.value.numel() > 1:
            return x, c
    return None


@dataclass
class Projection:
    """Rows of one linear's output, columns offset … offset + width of it."""

    node: Node  # the linear
    offsets: torch.Tensor  # (n,) first weight row read by each slice
    rows: torch.Tensor  # (n, R) rows of the linear's output (flattened to 2-D)
    source: Ref  # (n, R, in) the linear's input at those rows

    @property
    def weight(self) -> Node:
        return self.node.inputs[1]  # type: ignore[no-any-return]

    @property
    def bias(self) -> Node | None:
        bias = self.node.inputs[2] if len(self.node.inputs) > 2 else self.node.kwargs.get("bias")
        return bias if isinstance(bias, Node) else None


def projection(ref: Ref) -> Projection | None:
    """`ref` (n, R, K) as columns of a linear's output, if it is one."""
    node = ref.node
    if node is None or node.kind is not Kind.LINEAR or len(node.inputs) < 2 or not isinstance(node.inputs[1], Node):
        return None
    out_features = node.value.shape[-1]
    rows, cols = ref.index // out_features, ref.index % out_features  # (n, R, K) each
    width = ref.shape[-1]
    offsets = cols[:, 0, 0]  # (n,)
    if not bool((cols == offsets[:, None, None] + torch.arange(width)).all()):
        return None
    if not bool((rows == rows[:, :, :1]).all()):
        return None
    x = node.inputs[0]
    if not isinstance(x, Node):
        return None
    try:
        inner = resolve(x)
    except UnfollowableError:
        return None
    in_features = x.value.shape[-1]
    source_rows = inner.index.reshape(-1, in_features)[rows[:, :, 0]]  # (n, R, in)
    return Projection(node, offsets, rows[:, :, 0], Ref(inner.node, inner.base, source_rows))


def unscaled(ref: Ref) -> tuple[Ref, float | None, Node | None]:
    """A ref that is `x * c` (or `x / c`) of some x: the ref of x, the factor and the node that scaled."""
    node = ref.node
    if node is None:
        return ref, None, None
    found = scale_of(node)
    if found is None:
        return ref, None, None
    x, factor = found
    try:
        return operand_ref(node, x, ref.index), factor, node
    except UnfollowableError:
        return ref, None, None


def param_name(found: Found, node: Node | None, fallback: str) -> str | None:
    """A parameter's name in the trace (its name in the module, else `fallback`), recorded in `found.params`."""
    if node is None:
        return None
    name = node.param or fallback
    base = name
    n = 2
    while name in found.params and not (found.params[name].shape == node.value.shape
                                         and torch.equal(found.params[name], node.value)):
        name = f"{base}#{n}"
        n += 1
    found.params[name] = node.value
    return name


def shared(data: torch.Tensor, batch: int, heads: int) -> torch.Tensor | None:
    """(n, …) data as (batch, …) when every head of a batch item holds the same numbers."""
    per = data.reshape(batch, heads, *data.shape[1:])
    if heads == 1 or bool((per == per[:, :1]).all()):
        return per[:, 0]
    return None


class Operands:
    """Adds the roles of the inputs, queries, keys and values of one call to `found`, naming them by their kind."""

    def __init__(self, found: Found) -> None:
        self.found = found
        self.inputs: list[tuple[Ref, str]] = []  # input refs already made roles, with their names

    def _input(self, ref: Ref, preferred: str, axis: str = "token") -> str:
        """A role for the rows a projection read; the same rows read twice are one role."""
        for known, name in self.inputs:
            if known.same(ref):
                return name
        f = self.found
        data = ref.values  # (n, R, in)
        common = shared(data, f.batch, f.heads)
        name = f.fresh(preferred)
        f.add(Role(name, data if common is None else common, GivenOp(Msg("the tensor the code passed in")),
                   ref.origin, Msg("{name}: what the projections read", name=name), (axis, "dim"),
                   shared=common is not None))
        self.inputs.append((ref, name))
        return name

    def operand(self, ref: Ref, role: str, axis: str, fused: dict[int, str], input_name: str = "input") -> str:
        """The role of one operand (query, key or value); a projection gets its input as a role too."""
        f = self.found
        scaled = ref
        ref, factor, scaler = unscaled(ref)
        proj = projection(ref)
        if proj is None:
            name = f.add(Role(f.fresh(role), ref.values, GivenOp(Msg("given to the attention as it is")),
                              ref.origin, Msg("{role}: as the code passed it", role=role), (axis, "dim")))
            self.inputs.append((ref, name))
        else:
            name = self._projected(proj, ref, role, axis, fused, input_name)
        if factor is not None and scaler is not None:
            name = f.add(Role(f.fresh(f"{role}_scaled"), scaled.values,
                              ScaleOp(name, factor, Msg("the code scales the {role} by {factor}", role=role,
                                                        factor=f"{factor:.4g}")),
                              scaler.origin, Msg("{role} · {factor}", role=role, factor=f"{factor:.4g}"),
                              (axis, "dim")))
        return name

    def _projected(self, proj: Projection, ref: Ref, role: str, axis: str, fused: dict[int, str],
                   input_name: str) -> str:
        f = self.found
        weight = param_name(f, proj.weight, f"W_{role[0]}")
        bias = param_name(f, proj.bias, f"b_{role[0]}")
        assert weight is not None
        offsets = tuple(int(o) for o in proj.offsets)
        full = proj.weight.value.shape[0]
        if id(proj.node) in fused:  # one linear makes several of q, k, v: its output is a role, sliced by columns
            qkv = fused[id(proj.node)]
            return f.add(Role(f.fresh(role), ref.values, ColumnsOp(qkv, offsets), ref.origin,
                              Msg("{role}: columns of {source} for this head", role=role, source=qkv), (axis, "dim")))
        source = self._input(proj.source, input_name, axis)
        formula = Msg("{role} = {source}·{weight}ᵀ", role=role, source=source, weight=weight) if bias is None else \
            Msg("{role} = {source}·{weight}ᵀ + {bias}", role=role, source=source, weight=weight, bias=bias)
        if full != ref.shape[-1] and f.heads > 1:
            formula = Msg("{formula} (this head's rows of {weight})", formula=formula, weight=weight)
        return f.add(Role(f.fresh(role), ref.values, LinearOp(source, weight, bias, offsets), ref.origin, formula,
                          (axis, "dim")))

    def fused(self, refs: list[Ref]) -> dict[int, str]:
        """A linear that makes two or more of q, k, v from the same rows becomes one role (`qkv_proj`)."""
        f = self.found
        projections = [projection(unscaled(ref)[0]) for ref in refs]
        out: dict[int, str] = {}
        for proj in projections:
            if proj is None or id(proj.node) in out:
                continue
            same = [p for p in projections if p is not None and p.node is proj.node]
            if len(same) < 2 or not all(bool(torch.equal(p.rows, proj.rows)) for p in same):
                continue
            weight = param_name(f, proj.weight, "W_qkv")
            bias = param_name(f, proj.bias, "b_qkv")
            assert weight is not None
            out_features = proj.node.value.shape[-1]
            rows = proj.rows  # (n, R)
            index = rows[:, :, None] * out_features + torch.arange(out_features)  # (n, R, out)
            data = proj.node.value.reshape(-1)[index]
            common = shared(data, f.batch, f.heads)
            source = self._input(proj.source, "input")
            formula = Msg("{role} = {source}·{weight}ᵀ", role="qkv_proj", source=source, weight=weight)
            name = f.add(Role(f.fresh("qkv_proj"), data if common is None else common,
                              LinearOp(source, weight, bias, (0,) * (f.batch * f.heads)), proj.node.origin,
                              formula, ("token", "dim"), shared=common is not None))
            out[id(proj.node)] = name
        return out


def after_output(found: Found, output: Ref, output_role: str) -> None:
    """The heads put side by side (`concat`) and the projection after them (`projected`), when the code did that."""
    node = output.node
    if node is None:
        return
    for consumer in through_views(node):
        if consumer.kind is not Kind.LINEAR or not isinstance(consumer.inputs[0], Node):
            continue
        try:
            x = resolve(consumer.inputs[0])
        except UnfollowableError:
            continue
        if x.node is not node:
            continue
        _concat_and_project(found, output, output_role, consumer, x)
        return


def through_views(node: Node) -> list[Node]:
    """Consumers of `node`, seen through views and casts, and through a `cat` of its own pieces (breadth first)."""
    seen, queue, out = set(), [node], []
    while queue:
        current = queue.pop(0)
        for consumer in current.consumers:
            if id(consumer) in seen:
                continue
            seen.add(id(consumer))
            if consumer.is_view or consumer.name == "cast" or (consumer.kind is Kind.CAT
                                                               and joined(consumer) is not None):
                queue.append(consumer)
            else:
                out.append(consumer)
    return out


def _concat_and_project(found: Found, output: Ref, output_role: str, linear: Node, x: Ref) -> None:
    f = found
    in_features = linear.inputs[0].value.shape[-1]
    x_rows = x.index.reshape(-1, in_features)  # (N, E): positions in the output node
    out_index = output.index.reshape(f.batch, f.heads, *output.shape[1:])  # (B, H, L, dv)
    batch, heads, length, width = out_index.shape
    if in_features != heads * width:
        return
    side_by_side = out_index.permute(0, 2, 1, 3).reshape(batch, length, heads * width)  # (B, L, H·dv)
    # Which rows of the linear's input are the concatenated rows of each batch item: each row found by its
    # first position (a sorted search, not a Python loop over rows), then every position of it checked.
    firsts, order = torch.sort(x_rows[:, 0])  # (N,) each
    if not firsts.numel():
        return
    wanted = side_by_side[..., 0].contiguous()  # (B, L)
    pick = torch.searchsorted(firsts, wanted).clamp_(max=firsts.numel() - 1)
    if not bool(torch.equal(firsts[pick], wanted)):
        return
    pick = order[pick]  # (B, L) rows of the linear
    if not bool(torch.equal(x_rows[pick], side_by_side)):
        return
    weight = param_name(f, linear.inputs[1] if isinstance(linear.inputs[1], Node) else None, "W_o")
    bias_node = linear.inputs[2] if len(linear.inputs) > 2 else linear.kwargs.get("bias")
    bias = param_name(f, bias_node if isinstance(bias_node, Node) else None, "b_o")
    if weight is None:
        return
    if heads > 1:
        concat = f.add(Role("concat", output.base.reshape(-1)[side_by_side], ConcatOp(output_role), x.origin,
                            Msg("C = [O_0 | O_1 | … ]: every head's output side by side"), ("query", "dim"),
                            shared=True))
    else:
        concat = output_role
    out_features = linear.value.shape[-1]
    projected = linear.value.reshape(-1, out_features)[pick]  # (B, L, out)
    formula = Msg("Y = {source}·{weight}ᵀ", source=concat, weight=weight) if bias is None else \
        Msg("Y = {source}·{weight}ᵀ + {bias}", source=concat, weight=weight, bias=bias)
    f.add(Role("projected", projected, LinearOp(concat, weight, bias, (0,) * (f.batch * f.heads)), linear.origin,
               formula, ("query", "dim"), shared=True))


def call_operands(found: Found, q: Ref, k: Ref, v: Ref) -> tuple[str, str, str]:
    """The roles of a fused call's query, key and value (SDPA's, flex_attention's), each traced back to the
    projection that made it, a fused qkv's slice, or given as is; a value that is the key itself shares its role."""
    operands = Operands(found)
    fused = operands.fused([q, k, v])
    q_name = operands.operand(q, "query", "query", fused)
    k_name = operands.operand(k, "key", "key", fused, "key_input")
    v_name = operands.operand(v, "value", "key", fused, "value_input") if not v.same(k) else k_name
    return q_name, k_name, v_name
