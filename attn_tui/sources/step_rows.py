"""A generation step's attention weights, every head of a layer at once, from the new rows only.

Writing a token must cost about what the model's own step costs, so the step's weights (what the grid, the
sink share and the rows-so-far heatmap read at once) are computed here from the new token's row alone: its
query, key and value projections, the layer's q/k norm, its rotation at its own position, and the keys of every
earlier position kept from the steps before (as the model keeps its cache). Every other stage of the step is
traced later, when a view asks, by the one shared tracer (lazy_steps.py); the tests hold the two to each other
and both to one full forward.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from attn_tui.attention.variants.rope.compute import angles, rotate
from attn_tui.sources.families.shared.tracer import head_norm, rotate_pairs
from attn_tui.sources.families.spec import LayerSpec, NormSpec, RotarySpec
from attn_tui.trace.masks import softmax_dtype


def _normed(x: torch.Tensor, norm: NormSpec | None) -> torch.Tensor:
    """x (count, rows, d_h) through the layer's q or k norm: per head, or over the whole projection side by side."""
    if norm is None:
        return x
    if norm.scope != "projection":
        return head_norm(x, norm)
    count, rows, d_h = x.shape
    joined = x.transpose(0, 1).reshape(rows, count * d_h)  # (rows, count·d_h): the projection before the split
    return head_norm(joined, norm).view(rows, count, d_h).transpose(0, 1)


def rotary_table(rotary: RotarySpec, n: int, d_h: int, dtype: torch.dtype, device: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor, int]:
    """cos and sin (n, r) of positions 0…n−1 as the tracer turns them, and r, the dimensions turned."""
    rotated = round(d_h * rotary.fraction)
    rotated -= rotated % 2
    cos, sin = rotary.cos, rotary.sin
    if cos is None or sin is None:
        cos, sin = angles(n, rotated, rotary.base, dtype, device)  # (n, r): rotate-half layout
        if rotary.interleaved:
            cos, sin = (t[:, :rotated // 2].repeat_interleave(2, dim=-1) for t in (cos, sin))
        cos, sin = cos * rotary.scaling, sin * rotary.scaling
    return cos, sin, rotated


def _turned(x: torch.Tensor, rotary: RotarySpec, cos: torch.Tensor, sin: torch.Tensor, rotated: int) -> torch.Tensor:
    """x (count, rows, d_h) turned at the rows' positions (cos, sin (rows, r)), as the tracer turns each head."""
    if rotated == x.shape[-1] and not rotary.interleaved:
        return rotate(x, cos, sin)
    turn = rotate_pairs if rotary.interleaved else rotate
    return torch.cat([turn(x[..., :rotated], cos, sin), x[..., rotated:]], dim=-1)


class LayerRows:
    """One layer's keys as its scores read them (normed and turned), a row added per step, and the step's
    weights."""

    def __init__(self) -> None:
        self.keys: torch.Tensor | None = None  # (kv_heads, n, d_h): every position's key so far
        self.table: tuple[torch.Tensor, torch.Tensor, int] | None = None

    def weights(self, spec: LayerSpec, first: int, table: tuple[torch.Tensor, torch.Tensor, int] | None
                ) -> torch.Tensor:
        """(heads, rows, n) the weights of the new rows `spec.x` (rows, d) at positions first… over every key so
        far; `table`: the rotary cos, sin and turned width covering those positions (None: no rotation)."""
        x, heads, kv, d_h = spec.x, spec.heads, spec.kv_heads, spec.head_dim
        rows = x.shape[0]
        w = spec.weights
        q = F.linear(x, w["W_q"], w.get("b_q")).view(rows, heads, d_h).transpose(0, 1)  # (H, rows, d_h)
        k = F.linear(x, w["W_k"], w.get("b_k")).view(rows, kv, d_h).transpose(0, 1)  # (kv, rows, d_h)
        q, k = _normed(q, spec.q_norm), _normed(k, spec.k_norm)
        if spec.rotary is not None and table is not None:
            cos, sin, rotated = table
            at = slice(first, first + rows)
            q = _turned(q, spec.rotary, cos[at], sin[at], rotated)
            k = _turned(k, spec.rotary, cos[at], sin[at], rotated)
        self.keys = k if self.keys is None else torch.cat([self.keys, k], dim=1)  # (kv, n, d_h)
        n = self.keys.shape[1]
        group = heads // kv  # query heads h·group … share key/value head h (kv_map's layout), read without a copy
        scores = q.reshape(kv, group * rows, d_h) @ self.keys.transpose(-2, -1)  # (kv, group·rows, n)
        scaled = scores.view(heads, rows, n) * spec.scale  # (H, rows, n)
        if spec.soft_cap is not None:
            scaled = torch.tanh(scaled / spec.soft_cap) * spec.soft_cap
        masked = scaled.to(softmax_dtype(scaled.dtype))
        if rows > 1 or (spec.window is not None and n > spec.window):  # the newest row alone sees every key
            at_q = torch.arange(first, first + rows, device=x.device)[:, None]  # (rows, 1)
            at_k = torch.arange(n, device=x.device)[None, :]  # (1, n)
            allowed = at_k <= at_q
            if spec.window is not None:
                allowed = allowed & (at_k > at_q - spec.window)
            masked = masked.masked_fill(~allowed, float("-inf"))
        return torch.softmax(masked, dim=-1)  # (H, rows, n): a causal row always keeps its own key
