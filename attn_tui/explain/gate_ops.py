"""The arithmetic of gated attention's two stages: the gate σ(X·W_g) and the head's output times its gate.

`explain.cell` puts `EXPLAINERS` in the registry; each cell is recomputed in float64 from the
trace's own input rows and W_g, so the inspector shows where a gate opened or closed and why.
"""

from __future__ import annotations

import math

from attn_tui.explain.common import Explained, Explainer, fmt, operand_name, sum_terms
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.stage import Stage, Trace


def _sigmoid_gate(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.SigmoidGate)
    i, j = index
    row = op.offset + j
    source = operand_name(trace, op.source)
    lines, z = sum_terms(trace.operand(op.source)[i], trace.params[op.weight][row], f"{source}[{i}]",
                         f"{op.weight}[{row}]")
    if op.bias is not None:  # the model's b_g, added before σ
        bias = float(trace.params[op.bias][row].double())
        lines.append(f"{fmt(z)} + {op.bias}[{row}] ({fmt(bias)}) = {fmt(z + bias)}")
        z += bias
    total = 1 / (1 + math.exp(-z))
    lines += [f"σ({fmt(z)}) = 1 / (1 + e^({fmt(-z)})) = {fmt(total)}",
              _("the gate is open near 1 and closed near 0: the head's output in this dimension is multiplied by "
                "it")]
    return f"{stage.symbol}[{i},{j}] = σ({source}[{i}]·{op.weight}[{row}])", lines, total


def _gate_product(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.GateProduct)
    i, j = index
    output, gate = trace.stages[op.output], trace.stages[op.gate]
    o, g = float(output.data[i, j].double()), float(gate.data[i, j].double())
    total = o * g
    kept = _("{share}% of the output passes the gate").format(share=f"{100 * g:.1f}")
    return (f"{stage.symbol}[{i},{j}] = {output.symbol}[{i},{j}]·{gate.symbol}[{i},{j}]",
            [f"{fmt(o)}·{fmt(g)} = {fmt(total)}", kept], total)


EXPLAINERS: dict[type[ops.Op], Explainer] = {ops.SigmoidGate: _sigmoid_gate, ops.GateProduct: _gate_product}
