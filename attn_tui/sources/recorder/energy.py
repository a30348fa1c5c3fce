"""Scores made by a learned vector on an energy, not by a product of queries and keys.

Bahdanau's `Va(tanh(Wa(q) + Ua(k)))`, `sum(v * energy, -1)`, `energy @ v`, and the concat
form's `tanh(W [q; k])`: the energy (…, L, S, H) is found, then the roles that made it.
"""

from __future__ import annotations

import torch

from attn_tui.i18n import Msg
from attn_tui.sources.recorder.found import Found, GivenOp, Role, TanhOfPairOp, TanhOfSumOp
from attn_tui.sources.recorder.kinds import Kind
from attn_tui.sources.recorder.node import Node
from attn_tui.sources.recorder.operands import Operands, param_name
from attn_tui.sources.recorder.refs import Ref, UnfollowableError, base_of, operand_ref, resolve


def learned_vector(node: Node) -> bool:
    """`sum(v * energy, -1)` with v a parameter: a learned vector scoring energies, not a product of two inputs."""
    product = node.inputs[0] if node.inputs else None
    if not isinstance(product, Node) or product.name != "mul":
        return False
    hidden = product.value.shape[-1] if product.value.dim() else 0
    for vector in product.inputs[:2]:
        if isinstance(vector, Node) and vector.value.numel() == hidden:
            try:
                if base_of(vector).is_param:
                    return True
            except UnfollowableError:
                continue
    return False


def reduce_energy(node: Node, ref: Ref) -> tuple[Ref, Node, Node | None] | None:
    """`Va(energy)` (a linear to one number), `sum(v * energy, -1)` or `energy @ v`: (energy (…, L, S, H), v, bias)."""
    pos = ref.index
    if node.kind is Kind.LINEAR and node.value.shape[-1] == 1 and isinstance(node.inputs[0], Node):
        x = resolve(node.inputs[0])
        hidden = node.inputs[0].value.shape[-1]
        energy = x.index.reshape(-1, hidden)[pos]
        bias = node.inputs[2] if len(node.inputs) > 2 and isinstance(node.inputs[2], Node) else None
        return Ref(x.node, x.base, energy), node.inputs[1], bias
    if node.kind is Kind.SUM and isinstance(node.inputs[0], Node):
        dim = node.inputs[1] if len(node.inputs) > 1 else node.kwargs.get("dim")
        product = node.inputs[0]
        if isinstance(dim, (tuple, list)) and len(dim) == 1:
            dim = dim[0]
        if not isinstance(dim, int) or dim % product.value.dim() != product.value.dim() - 1 \
                or product.name != "mul" or node.kwargs.get("keepdim"):
            return None
        hidden = product.value.shape[-1]
        rows = pos[..., None] * hidden + torch.arange(hidden)  # (…, L, S, H) positions in the product
        a, b = product.inputs[0], product.inputs[1]
        for vector, energy in ((a, b), (b, a)):
            if isinstance(vector, Node) and isinstance(energy, Node) and vector.value.numel() == hidden \
                    and energy.value.shape == product.value.shape:
                return operand_ref(product, energy, rows), vector, None
    return None


def energy_roles(found: Found, operands: Operands, energy: Ref) -> tuple[str, str | None]:
    """The roles before an energy (…, L, S, H): Bahdanau's W_a q + U_a k, or the concat form's W[q; k]."""
    node = energy.node
    origin = None if node is None else node.origin
    if node is not None and node.kind is Kind.TANH and isinstance(node.inputs[0], Node):
        inner = operand_ref(node, node.inputs[0], energy.index)
        made = inner.node
        if made is not None and made.name == "add" and all(isinstance(t, Node) for t in made.inputs[:2]):
            left = operand_ref(made, made.inputs[0], inner.index)
            right = operand_ref(made, made.inputs[1], inner.index)
            for q, k in ((left, right), (right, left)):
                if bool((q.index == q.index[..., :, :1, :]).all()) and bool((k.index == k.index[..., :1, :, :]).all()):
                    q_rows = Ref(q.node, q.base, q.index[..., :, 0, :])
                    k_rows = Ref(k.node, k.base, k.index[..., 0, :, :])
                    qp = operands.operand(q_rows, "query_proj", "query", {}, "query")
                    kp = operands.operand(k_rows, "key_proj", "key", {}, "key")
                    name = found.add(Role("energy", energy.values, TanhOfSumOp(qp, kp), origin,
                                          Msg("E = tanh({left} + {right})", left=qp, right=kp),
                                          ("query", "key", "hidden")))
                    found.kind = "additive"
                    return name, None
        if made is not None and made.kind is Kind.LINEAR:
            pair = _pair(found, operands, made, inner, energy.values)
            if pair is not None:
                found.kind = "concat"
                return pair, None
    name = found.add(Role("energy", energy.values, GivenOp(Msg("made by {op}", op=node.name if node else "?")),
                          origin, Msg("E: the energy the scores are read from"), ("query", "key", "hidden")))
    return name, None


def _pair(found: Found, operands: Operands, linear: Node, out: Ref, values: torch.Tensor) -> str | None:
    """tanh(W [q; k] + b): the linear reads a concatenation of a query row and a key row."""
    cat = linear.inputs[0]
    if not isinstance(cat, Node) or cat.name != "cat":
        return None
    parts = [p for p in (cat.inputs[0] if isinstance(cat.inputs[0], tuple) else cat.inputs) if isinstance(p, Node)]
    if len(parts) != 2:
        return None
    width = linear.inputs[0].value.shape[-1]
    hidden = linear.value.shape[-1]
    rows = out.index // hidden  # (…, L, S, H)
    if not bool((rows == rows[..., :1]).all()) or not bool((out.index % hidden == torch.arange(hidden)).all()):
        return None
    tags, where = [], []
    dim = cat.kwargs.get("dim", cat.inputs[1] if len(cat.inputs) > 1 and isinstance(cat.inputs[1], int) else 0)
    for n, part in enumerate(parts):
        ref = resolve(part)
        tags.append(torch.full(part.value.shape, n))
        where.append(ref.index)
    tag = torch.cat(tags, dim=dim).reshape(-1, width)[rows[..., 0]]  # (…, L, S, width)
    at = torch.cat(where, dim=dim).reshape(-1, width)[rows[..., 0]]
    dq = int((tag[(0,) * (tag.dim() - 1)] == 0).sum())
    if not bool((tag[..., :dq] == 0).all()) or not bool((tag[..., dq:] == 1).all()):
        return None
    q, k = at[..., :dq], at[..., dq:]
    if not bool((q == q[..., :, :1, :]).all()) or not bool((k == k[..., :1, :, :]).all()):
        return None
    first, second = resolve(parts[0]), resolve(parts[1])
    q_name = operands.operand(Ref(first.node, first.base, q[..., :, 0, :]), "query", "query", {})
    k_name = operands.operand(Ref(second.node, second.base, k[..., 0, :, :]), "key", "key", {})
    weight = param_name(found, linear.inputs[1] if isinstance(linear.inputs[1], Node) else None, "W_c")
    bias_node = linear.inputs[2] if len(linear.inputs) > 2 else None
    bias = param_name(found, bias_node if isinstance(bias_node, Node) else None, "b_c")
    if weight is None:
        return None
    return found.add(Role("energy", values, TanhOfPairOp(q_name, k_name, weight, bias),
                          linear.origin, Msg("E = tanh({weight}·[q; k])", weight=weight),
                          ("query", "key", "hidden")))
