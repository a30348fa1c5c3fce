"""Whole-model views of attention: per-head statistics and attention rollout.

Computed from a Trace's own `weights` stages (every layer and head of it), so the grid
and the numbers beside it come from exactly the weights the stages show. What they produce
(`ModelStats`, `HeadStats`) is part of what a run produced and lives in `trace.model_stats`.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from attn_tui.attention.head_roles import head_roles
from attn_tui.trace.model_stats import ROLLOUT_FORMULA as ROLLOUT_FORMULA
from attn_tui.trace.model_stats import HeadStats as HeadStats
from attn_tui.trace.model_stats import ModelStats as ModelStats
from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Trace
from attn_tui.trace.written import grows, written_rows


def stack(trace: Trace) -> torch.Tensor:
    """Every layer's and head's weights as one (layers, heads, N, N) float32 tensor (a generation's: the rows
    written so far, trace/written.py). Where layers have their own head counts (Qwen3-Next), `heads` is the most
    any layer has and a head a layer lacks is zeros."""
    def weights(layer: int, head: int) -> torch.Tensor:
        if head >= trace.heads_at(layer):  # past this layer's own heads (a full layer beside wider linear ones)
            return torch.zeros(len(trace.query_tokens), len(trace.query_tokens))  # (N, N), as a lacking linear head
        if grows(trace) and trace.find("implied", layer, 0) is None:
            return written_rows(trace, "weights", layer, head)
        if grows(trace):  # a linear-attention layer writing: the implied rows of its steps; 0 for a head it lacks
            n = len(trace.query_tokens)
            return (written_rows(trace, "implied", layer, head) if Place("implied", layer, head, 0) in trace.stages
                    else torch.zeros(n, n))
        if trace.find("implied", layer, 0) is None:
            return trace.tensor("weights", layer, head)
        # a linear-attention layer (Qwen3-Next's): the matrix its recurrence equals; 0 for a head it lacks
        implied = trace.stages.get(Place("implied", layer, head))
        n = len(trace.query_tokens)
        return implied.tensor if implied is not None else torch.zeros(n, n)

    return torch.stack([torch.stack([weights(layer, head).float() for head in range(trace.heads_at(None))])
                        for layer in range(trace.layers)])


def real_keys(trace: Trace) -> torch.Tensor:
    """(N,) bool: keys that some query may attend (not padding)."""
    if trace.mask is None:
        return torch.ones(len(trace.key_tokens), dtype=torch.bool)
    return trace.mask.allowed.any(dim=0).cpu()


def head_stats(weights: torch.Tensor, real_rows: torch.Tensor) -> list[HeadStats]:
    """Statistics per (layer, head) of weights (layers, heads, N, N) over the real query rows (N,).

    The largest weight is each row's largest, averaged over the rows that weigh more than one key: a causal
    model's first query sees only itself, and its 1.0 would say the same of every head."""
    rows = weights[:, :, real_rows]  # (layers, heads, R, N)
    plogp = torch.where(rows > 0, rows * rows.clamp_min(1e-30).log(), torch.zeros_like(rows))
    entropy = -plogp.sum(-1).mean(-1)  # (layers, heads)
    chose = ((rows > 0).sum(-1) > 1).to(rows.dtype)  # (layers, heads, R): rows with more than one key to weigh
    row_peak = rows.amax(-1)  # (layers, heads, R)
    peak = torch.where(chose.sum(-1) > 0, (row_peak * chose).sum(-1) / chose.sum(-1).clamp_min(1),
                       row_peak.amax(-1))  # (layers, heads)
    first = rows[..., 0].mean(-1)  # (layers, heads)
    return [HeadStats(layer, head, float(entropy[layer, head]), float(peak[layer, head]), float(first[layer, head]))
            for layer in range(weights.shape[0]) for head in range(weights.shape[1])]


def rollout(weights: torch.Tensor, real: torch.Tensor | None = None) -> torch.Tensor:
    """Attention rollout (Abnar & Zuidema, 2020): (N, N) attention from the last layer to the input.

    Each layer's head-mean is mixed half-and-half with the identity for the residual
    path, rows are renormalised, and the layers are multiplied from the first upward.
    `real` (N,) bool keeps padding out of the product.
    """
    n = weights.shape[-1]
    eye = torch.eye(n, dtype=weights.dtype, device=weights.device)
    result = eye
    for layer in range(weights.shape[0]):
        a = 0.5 * weights[layer].mean(0) + 0.5 * eye  # (N, N)
        if real is not None:
            a = a * real[None, :]
        a = a / a.sum(-1, keepdim=True)
        result = a @ result
    return result


def moved_stack(trace: Trace) -> torch.Tensor | None:
    """(layers, heads, N, N) every head's `moved` stage; None where a head has none (a variant, a generation, a
    model whose output projection was not found)."""
    if grows(trace):
        return None
    rows = []
    for layer in range(trace.layers):
        found = [trace.find("moved", layer, head) for head in range(trace.heads)]
        if any(stage is None or stage.place.layer != layer or stage.place.head != head
               for head, stage in enumerate(found)):
            return None
        rows.append(torch.stack([trace.tensor("moved", layer, head).float().cpu() for head in range(trace.heads)]))
    return torch.stack(rows)  # (layers, heads, N, N)


def rollout_moved(moved: torch.Tensor | None, real: torch.Tensor | None = None) -> torch.Tensor | None:
    """Value-weighted attention rollout: `rollout` over each head's norm-based weights instead of its A.

    R = Π_l (½·mean_h Ã_l + ½·I), rows renormalised, with Ã[i, j] = M[i, j] / Σ_k M[i, k] and
    M[i, j] = ‖A[i, j] · v_j·W_O,hᵀ‖ the `moved` stage: attention rollout (Abnar & Zuidema 2020) read through
    Kobayashi et al. (2020)'s norms, so a key that takes weight but whose value moves little counts little.
    `moved` (layers, heads, N, N) is every head's stage (`moved_stack`); None gives None.
    """
    if moved is None:
        return None
    total = moved.sum(-1, keepdim=True)
    return rollout(torch.where(total > 0, moved / total.clamp_min(1e-30), torch.zeros_like(moved)), real)


def model_stats(trace: Trace) -> ModelStats:
    """Stack every head's weights, read their statistics and the rollout, over the keys that are not padding."""
    weights = stack(trace).cpu()  # (layers, heads, N, N): fills every layer not computed yet
    real = real_keys(trace)  # (N,)
    # the rollout mixes softmax rows: a linear-attention layer's implied matrix is none, so it passes as the
    # residual path alone (identity)
    softmax = [trace.find("implied", layer) is None for layer in range(trace.layers)]
    own = [trace.heads_at(layer) for layer in range(trace.layers)]
    # a layer's missing heads (zeros in `weights`) stand in as its own heads' mean, so each layer's mean is its own
    mixed = torch.stack([(w if n == w.shape[0] else torch.cat([w[:n], w[:n].mean(0, keepdim=True).expand(
        w.shape[0] - n, -1, -1)])) if keep else torch.eye(w.shape[-1])[None].expand_as(w)
        for w, keep, n in zip(weights, softmax, own, strict=True)]) if not all(softmax) else weights
    ids: tuple[int, ...] = getattr(trace.meta, "token_ids", ())  # a real model's: ids, which two tokens printed
    # alike do not share; the variants' tokens are their words
    tokens = ids if len(ids) == len(trace.key_tokens) else trace.key_tokens
    scored = torch.arange(len(tokens)) >= getattr(trace.meta, "scored_from", 0)  # (N,): a probe's repeated half
    runs = weights[:, :trace.heads]  # the roles (and the atlas) read the run's heads
    roles = (head_roles(runs, tokens, real, scored) if len(tokens) == weights.shape[-1] == weights.shape[-2]
             else ())
    moved = moved_stack(trace)  # (layers, heads, N, N) or None
    if moved is not None and roles:  # how much each head moves, per scored query row: what the atlas can rank by
        per_row = moved.sum(-1)[..., scored & real]  # (layers, heads, R)
        roles = tuple(replace(r, moved=float(per_row[r.layer, r.head].mean())) for r in roles)
    stats = tuple(s for s in head_stats(weights, real) if s.head < own[s.layer])  # only the heads a layer has
    return ModelStats(weights, stats, rollout(mixed, real), blocked(trace), roles,
                      rollout_moved(moved, real))


def blocked(trace: Trace) -> torch.Tensor | None:
    """(layers, N, N) bool: the cells each layer's own mask hides (a sliding layer its window, a global layer
    only what the whole model masks); None when no layer masks anything."""
    layer_masks = [trace.mask_of(layer) for layer in range(trace.layers)]
    if all(mask is None for mask in layer_masks):
        return None
    n, s = len(trace.query_tokens), len(trace.key_tokens)
    return torch.stack([torch.zeros(n, s, dtype=torch.bool) if mask is None else (~mask.allowed).cpu()
                        for mask in layer_masks])
