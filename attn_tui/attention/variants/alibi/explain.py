"""The arithmetic of ALiBi's bias: a head's slope times the distance between query and key."""

from __future__ import annotations

from attn_tui.attention.variants.alibi import DistanceBias
from attn_tui.explain.common import Explained, Explainer, fmt, param
from attn_tui.i18n import _
from attn_tui.trace.ops import Op
from attn_tui.trace.stage import Stage, Trace


def _distance_bias(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, DistanceBias)
    i, j = index
    slope = param(trace, op.slopes, op.index)
    total = 0.0 - slope * abs(i - j)  # +0 on the diagonal, as the stage holds
    heads = trace.params[op.slopes].numel()
    return (f"B[{i},{j}] = −m·|{i} − {j}|",
            [_("m = {m}: the slope of head {h} (ALiBi's geometric sequence for {n} heads)").format(
                m=fmt(slope), h=op.index, n=heads),
             _("distance |{i} − {j}| = {d}").format(i=i, j=j, d=abs(i - j)),
             f"−{fmt(slope)}·{abs(i - j)} = {fmt(total)}",
             _("the farther the key, the lower its score: nearby tokens win ties")], total)


EXPLAINERS: dict[type[Op], Explainer] = {DistanceBias: _distance_bias}
