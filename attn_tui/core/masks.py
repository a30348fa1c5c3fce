"""Masks (1 = may attend, the SDPA convention) and how masked scores are filled.

Padding is about keys; causality is about positions. Both reduce to one boolean
(L, S) matrix so every variant masks the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from attn_tui.core.errors import ConfigError, ShapeError
from attn_tui.core.inputs import PAD_TOKEN, shape_text
from attn_tui.core.settings import MASK_NAMES as MASK_KINDS
from attn_tui.i18n import Join, Msg

FILLS = {"-inf": float("-inf"), "-1e9": -1e9}


@dataclass(frozen=True, eq=False)
class MaskSpec:
    """A mask and why each cell is masked: causal order, a sliding window, `<pad>` keys, a custom matrix.

    Kept as its parts, not as an (L, S) matrix, so a 16k × 16k mask costs nothing until a
    tile of it is asked for; `allowed` builds the whole matrix (for small traces), and
    the inspector asks `reasons` which rule hid a cell. A model's own mask may be given
    whole as `dense`. `origin` places a spec on a part of the scores (a flash tile of
    keys): its own cell (i, j) is cell (origin + (i, j)) of the whole mask.
    """

    shape: tuple[int, int]  # (L, S), or the part's own shape when `origin` is set
    causal: bool = False
    padding: torch.Tensor | None = None  # (S,) bool, True = the key is padding
    custom: torch.Tensor | None = None  # (L, S) bool, as typed
    dense: torch.Tensor | None = None  # (L, S) bool, True = may attend: a mask given whole
    window: int | None = None  # sliding: query i sees keys i − window < j (with causal: … ≤ i)
    origin: tuple[int, int] = (0, 0)  # where this spec's cell (0, 0) sits in the whole mask
    device: torch.device | str = "cpu"  # where a tile is built: the scores' device, so a CUDA run masks on CUDA

    def tile(self, rows: slice, cols: slice) -> torch.Tensor:
        """(rows, cols) bool, True = may attend, for one tile of the scores."""
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        r0, r1, c0, c1 = r0 + self.origin[0], r1 + self.origin[0], c0 + self.origin[1], c1 + self.origin[1]
        if self.dense is not None:
            return self.dense[r0:r1, c0:c1]
        device = self.device
        out = torch.ones(r1 - r0, c1 - c0, dtype=torch.bool, device=device)
        if self.causal or self.window is not None:
            cols_at = torch.arange(c0, c1, device=device)[None, :]  # (1, cols)
            rows_at = torch.arange(r0, r1, device=device)[:, None]  # (rows, 1)
            if self.causal:
                out &= cols_at <= rows_at
            if self.window is not None:
                out &= cols_at > rows_at - self.window
        if self.padding is not None:
            out &= ~self.padding[c0:c1][None, :]
        if self.custom is not None:
            out &= self.custom[r0:r1, c0:c1].to(out.device)
        return out

    def part(self, rows: slice, cols: slice) -> MaskSpec:
        """The same mask seen from a part of the scores (a tile of keys), by its parts, never whole."""
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        return MaskSpec((r1 - r0, c1 - c0), self.causal, self.padding, self.custom, self.dense, self.window,
                        (self.origin[0] + r0, self.origin[1] + c0), self.device)

    @cached_property
    def allowed(self) -> torch.Tensor:
        """The whole (L, S) matrix: for traces small enough to hold their scores whole."""
        return self.tile(slice(None), slice(None))

    def empty_rows(self, block: int = 1024) -> list[int]:
        """Query rows that may attend to no key at all (found a block of rows at a time)."""
        found: list[int] = []
        for start in range(0, self.shape[0], block):
            rows = slice(start, min(start + block, self.shape[0]))
            empty = ~self.tile(rows, slice(None)).any(dim=-1)
            found += [start + int(i) for i in torch.nonzero(empty).flatten().tolist()]
        return found

    def reasons(self, i: int, j: int) -> list[Msg]:
        """Why query i may not attend key j (empty when it may); i and j count from this spec's origin."""
        i, j = i + self.origin[0], j + self.origin[1]
        found = []
        if self.causal and j > i:
            found.append(Msg("future key: key {j} comes after query {i} (causal: no looking ahead)", i=i, j=j))
        if self.window is not None and j <= i - self.window:
            found.append(Msg("sliding window: key {j} is {gap} positions before query {i}, outside the window of "
                             "{window} (query i sees keys i − {window} < j ≤ i)", i=i, j=j, gap=i - j,
                             window=self.window))
        if self.padding is not None and bool(self.padding[j]):
            found.append(Msg("<pad> key: key {j} is padding", j=j))
        if self.custom is not None and not bool(self.custom[i, j]):
            found.append(Msg("custom: the custom mask holds 0 here"))
        if not found and self.dense is not None and not bool(self.dense[i, j]):
            found.append(Msg("the model's own mask holds 0 here"))
        return found

    def describe(self) -> Msg:
        sliding = [Msg("sliding window {window}", window=self.window)] if self.window is not None else []
        parts = ([Msg("causal")] if self.causal and not sliding else []) + sliding + (
            [Msg("padding")] if self.padding is not None else []) + (
            [Msg("custom")] if self.custom is not None else [])
        return Join(" + ", *parts) if parts else Msg("the model's own")

    def as_dict(self) -> dict[str, object]:
        """The parts, for an export that cannot hold the whole matrix."""
        return {"shape": list(self.shape), "causal": self.causal, "window": self.window,
                "padding_keys": None if self.padding is None else torch.nonzero(self.padding).flatten().tolist(),
                "custom": None if self.custom is None else self.custom.to(torch.int64).tolist()}


def build_mask(kind: str, key_tokens: tuple[str, ...], n_queries: int, pad_keys: int = 0,
               custom: torch.Tensor | None = None, device: torch.device | str = "cpu",
               window: int | None = None) -> MaskSpec | None:
    """The mask of `kind` (AND a custom 0/1 matrix) as a MaskSpec; None when nothing is masked.

    Causal follows torch's `is_causal`: query i sees keys 0..i (top-left aligned when
    L ≠ S). Sliding is causal within a window: query i sees keys i − window < j ≤ i
    (Mistral's and Gemma's local layers). Padding masks keys whose token is `<pad>` and
    the last `pad_keys` keys.
    """
    if kind not in MASK_KINDS:
        raise ConfigError(Msg("unknown mask {kind}; choose one of {names}", kind=repr(kind),
                              names=", ".join(MASK_KINDS)))
    n_keys = len(key_tokens)
    if pad_keys < 0 or pad_keys > n_keys:
        raise ConfigError(Msg("--pad-keys {n} is outside 0..{keys} (there are {keys} keys)", n=pad_keys, keys=n_keys))
    sliding = kind.startswith("sliding")
    if sliding and (window is None or window < 1):
        raise ConfigError(Msg("--window must be a whole number of at least 1, not {window}", window=window))
    kept_window = window if sliding else None
    causal = ("causal" in kind or sliding) and n_keys > 1
    padding = padding_keys(key_tokens, pad_keys, device) if "padding" in kind else None
    padding = padding if padding is not None and bool(padding.any()) else None
    if custom is not None:
        if tuple(custom.shape) != (n_queries, n_keys):
            raise ShapeError(Msg("the mask is {mask} but the scores are {scores}: it needs one entry per query and key",
                                 mask=shape_text(tuple(custom.shape)), scores=shape_text((n_queries, n_keys))))
        custom = custom.to(device=device, dtype=torch.bool)
        custom = None if bool(custom.all()) else custom
    if not causal and kept_window is None and padding is None and custom is None:
        return None
    return MaskSpec((n_queries, n_keys), causal, padding, custom, window=kept_window, device=device)


def padding_keys(key_tokens: tuple[str, ...], pad_keys: int, device: torch.device | str = "cpu"
                 ) -> torch.Tensor:
    """Boolean (S,) vector, True for keys that are padding."""
    pad = torch.tensor([t == PAD_TOKEN for t in key_tokens], dtype=torch.bool, device=device)
    if pad_keys:
        pad[len(key_tokens) - pad_keys:] = True
    return pad


def custom_mask(rows: list[list[float]]) -> torch.Tensor:
    """Validate a typed 0/1 matrix; anything else is an error rather than a guess."""
    for i, row in enumerate(rows, start=1):
        for j, value in enumerate(row, start=1):
            if value not in (0.0, 1.0):
                raise ShapeError(Msg("the mask holds {value} at row {i}, column {j}: use 1 where a query may attend "
                                     "and 0 where it may not", value=f"{value:g}", i=i, j=j))
    return torch.tensor(rows, dtype=torch.bool)


def softmax_dtype(dtype: torch.dtype) -> torch.dtype:
    """At least float32 for mask and softmax (-1e9 must survive float16); float64 stays float64."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def apply_mask(scores: torch.Tensor, mask: torch.Tensor | None, fill: str) -> torch.Tensor:
    """Scores with masked cells set to the fill, in at least float32 so -1e9 survives float16."""
    if fill not in FILLS:
        raise ConfigError(Msg("unknown mask fill {fill}; choose -inf or -1e9", fill=repr(fill)))
    out = scores.to(softmax_dtype(scores.dtype))
    if mask is None:
        return out.clone() if out is scores else out
    return out.masked_fill(~mask, FILLS[fill])


def masked_softmax(masked: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """Softmax over keys in float32; rows with nothing to attend become zeros (as SDPA does).

    With fill -inf such a row is all -inf and plain softmax gives NaN; with -1e9 it is
    uniform, which is left as is because that is what -1e9 really computes.
    """
    weights = torch.softmax(masked.to(softmax_dtype(masked.dtype)), dim=-1)
    if mask is not None:
        empty = ~mask.any(dim=-1, keepdim=True) & torch.isinf(masked).all(dim=-1, keepdim=True)
        weights = weights.masked_fill(empty, 0.0)
    return weights


def shape_meaningless(kind: str, n_queries: int, n_keys: int) -> Msg | None:
    """Why a causal or sliding mask means nothing for these shapes, or None when it may mean something.

    Causality compares the position of a query with the position of a key, so it needs
    one sequence on both axes. With L ≠ S (typed cross-attention: a decoder's queries over
    an encoder's keys) torch's top-left `is_causal` still keeps query i to keys 0..i,
    which changes the numbers without meaning anything: say so rather than hide it.
    """
    if not ("causal" in kind or kind.startswith("sliding")) or n_queries == n_keys or n_keys < 2:
        return None
    return Msg("the {mask} mask means nothing for {rows} × {cols} scores: queries and keys are not one sequence "
               "(cross-attention), yet query i is kept to keys 0..i (choose mask none or padding)",
               mask=kind, rows=n_queries, cols=n_keys)
