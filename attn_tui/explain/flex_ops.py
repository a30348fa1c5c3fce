"""The arithmetic of flex_attention's own stages: a score_mod cell, a tile of the block map.

A score_mod is the user's function: it is never called here (the app may not run user code), so
the inspector shows what it was given at the cell (the score and the indices b, h, q_idx, kv_idx)
and what it returned, which the recording computed where the user's code ran.
"""

from __future__ import annotations

from attn_tui.explain.common import Explained, Explainer, fmt
from attn_tui.i18n import _
from attn_tui.trace import ops
from attn_tui.trace.stage import Stage, Trace


def _score_mod(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.ScoreMod)
    i, j = index
    source = trace.stages[op.source]
    given = float(source.data[i, j].double())
    total = float(stage.data[i, j].double())
    lines = [_("score_mod is your function {name}: {where}").format(name=op.function, where=op.where),
             _("given the score {score} and the indices b = {b}, h = {h}, q_idx = {q}, kv_idx = {kv}").format(
                 score=fmt(given), b=op.batch, h=op.head, q=i, kv=j),
             _("it returned {value} (run where your code ran, on this cell's indices)").format(value=fmt(total)),
             _("change: {delta}").format(delta=fmt(total - given))]
    title = f"{stage.symbol}[{i},{j}] = {op.function}({source.symbol}[{i},{j}], {op.batch}, {op.head}, {i}, {j})"
    return title, lines, total


def _block_tiles(trace: Trace, stage: Stage, index: tuple[int, ...]) -> Explained:
    op = stage.op
    assert isinstance(op, ops.BlockTiles)
    qb, kb = index
    (q_size, kv_size), (length, keys) = op.block, op.shape
    total = float(stage.data[qb, kb].double())
    lines = [_("tile ({qb}, {kb}): queries {q0}–{q1} × keys {k0}–{k1}").format(
        qb=qb, kb=kb, q0=qb * q_size, q1=min((qb + 1) * q_size, length) - 1, k0=kb * kv_size,
        k1=min((kb + 1) * kv_size, keys) - 1)]
    if total >= 2:
        lines.append(_("full: the kernel computes every score of this tile without calling the mask_mod"))
    elif total >= 1:
        lines.append(_("partial: the kernel computes this tile and applies the mask_mod {mod} cell by cell").format(
            mod=op.mask_mod))
    else:
        lines.append(_("skipped: the kernel never computes this tile; its scores are -∞"))
    return f"{stage.symbol}[{qb},{kb}]", lines, total


EXPLAINERS: dict[type[ops.Op], Explainer] = {ops.ScoreMod: _score_mod, ops.BlockTiles: _block_tiles}
