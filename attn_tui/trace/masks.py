"""Masks (1 = may attend, the SDPA convention) and how masked scores are filled.

Padding is about keys; causality is about positions. Both reduce to one boolean
(L, S) matrix so every variant masks the same way. A custom mask may be typed the other
way round (1 = blocked, as seed note 003 writes padding) and with one row per key; it is
read by its declared convention (`mask_means`) and kept as typed, so the inspector can
say what the typed matrix holds at a cell as well as what it means.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from attn_tui.ask.inputs import PAD_TOKEN, shape_text
from attn_tui.ask.settings import MASK_MEANS_NAMES as MASK_MEANS
from attn_tui.ask.settings import MASK_NAMES as MASK_KINDS
from attn_tui.errors import ConfigError, ShapeError
from attn_tui.i18n import Join, Msg

FILLS = {"-inf": float("-inf"), "-1e9": -1e9}
# How a program's own mask (a recorded trace) is read: what its values mean where the code applies it.
CODE_RULES = ("masked_fill", "setitem", "where_keep", "where_fill", "additive", "gate", "sdpa_bool",
              "key_padding", "mask_mod")


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
    means: str = "attend"  # what a 1 in `custom` meant as typed: attend (SDPA) or block (1 = padding)
    code_mask: torch.Tensor | None = None  # (L, S) a program's own mask values, as its code holds them
    code_rule: str = ""  # how the code applies `code_mask`: one of CODE_RULES
    code_fill: str = ""  # what the code writes where its mask blocks (-inf, -1e9, …)
    device: torch.device | str = "cpu"  # where a tile is built: the scores' device, so a CUDA run masks on CUDA
    code_test: str = ""  # the test the code made of `code_mask` ("== 0" for `masked_fill(mask == 0, …)`), or ""
    by_hand: bool = False  # `custom` was made cell by cell with `x` (not given by a file or sample)
    mod: str = ""  # a flex_attention mask_mod that made `code_mask` ("causal (demo.py:12)"), or ""
    mod_at: tuple[int, int, int, int] = (0, 0, 0, 0)  # (batch item, head, query block, key block size) of `mod`

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
                        (self.origin[0] + r0, self.origin[1] + c0), self.means, self.code_mask, self.code_rule,
                        self.code_fill, self.device, code_test=self.code_test, mod=self.mod, mod_at=self.mod_at)

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
            found.append(Msg("custom: the custom mask holds 1 here (1 = blocked)") if self.means == "block"
                         else Msg("custom: the custom mask holds 0 here (1 = may attend)"))
        if not found and self.mod and self.dense is not None and not bool(self.dense[i, j]):
            found.append(self._mod_reason(i, j))
        if not found and self.dense is not None and not bool(self.dense[i, j]):
            found.append(self.as_given(i - self.origin[0], j - self.origin[1]) or
                         Msg("the model's own mask holds 0 here"))
        return found

    def _mod_reason(self, i: int, j: int) -> Msg:
        """Why flex_attention blocked cell (i, j): the mask_mod said False, or the block mask skipped its tile."""
        b, h, q_block, kv_block = self.mod_at
        if self.code_mask is not None and not bool(self.code_mask[i, j]):
            return Msg("mask_mod {name} is False at ({b}, {h}, {q}, {kv})", name=self.mod, b=b, h=h, q=i, kv=j)
        return Msg("the block mask skips tile ({qb}, {kb}): mask_mod {name} is True at ({b}, {h}, {q}, {kv}) but the "
                   "kernel never computes this tile", qb=i // max(q_block, 1), kb=j // max(kv_block, 1),
                   name=self.mod, b=b, h=h, q=i, kv=j)

    def as_given(self, i: int, j: int) -> Msg | None:
        """The mask at (i, j) as it was given, when that differs from the 1 = may attend view; else None.

        A program's own mask is said as its code holds it (True, 1, -1e9) and what the code does
        with it, so a trace of note 003's `masked_fill(mask, -inf)` reads "holds True → filled
        with -inf (blocked)", not "holds 0"; a custom mask typed 1 = blocked is said as typed.
        """
        at_i, at_j = i + self.origin[0], j + self.origin[1]
        if self.code_mask is not None:
            value = self.code_mask[at_i, at_j]
            held = str(bool(value)) if value.dtype == torch.bool else f"{float(value) + 0.0:g}"  # -0.0 reads 0
            blocked = self.dense is not None and not bool(self.dense[at_i, at_j])
            if self.code_test:  # the code compared its mask: its value, and the test's outcome that decided
                truth = str(blocked != (self.code_rule == "where_keep"))  # where(mask == 0, x, fill) keeps True
                return (Msg("your code's mask holds {held} here, so `mask {test}` is {truth} → filled with {fill} "
                            "(blocked)", held=held, test=self.code_test, truth=truth, fill=self.code_fill or "?")
                        if blocked else Msg("your code's mask holds {held} here, so `mask {test}` is {truth} → kept "
                                            "(may attend)", held=held, test=self.code_test, truth=truth))
            return code_rule_says(self.code_rule, held, blocked, self.code_fill)
        if self.custom is not None and self.means == "block":
            typed = int(not bool(self.custom[at_i, at_j]))  # `custom` is held read (True = may attend)
            return Msg("the mask as typed holds {value} here (1 = blocked)", value=typed)
        return None

    def given_as(self) -> str:
        """How the mask was given when not as the heatmap's 1 = may attend: 'code-mask', 'typed-block', or ''."""
        if self.code_mask is not None:
            return "code-mask"
        return "typed-block" if self.custom is not None and self.means == "block" else ""

    def legend_note(self) -> str:
        """The convention, short, for a heatmap's legend: only when the mask was given otherwise than 1 = may attend."""
        if self.code_mask is not None:
            rule = CODE_RULE_SHORT.get(self.code_rule, "?").format(fill=self.code_fill.replace("inf", "∞"))
            if self.code_test and rule.startswith(("True", "False")):  # `mask == 0` True → -∞: the test decides
                rule = f"mask {self.code_test} {rule}"
            return str(Msg("code: {rule}", rule=rule))
        return str(Msg("typed 1 = blocked")) if self.given_as() else ""

    def convention(self) -> Msg:
        """The convention of the mask as given: the app's view is always 1 = may attend."""
        if self.code_mask is not None:
            return code_rule_name(self.code_rule)
        if self.custom is not None and self.means == "block":
            return Msg("1 = blocked, as typed; shown as 1 = may attend")
        return Msg("1 = may attend")

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
                "custom": None if self.custom is None else self.custom.to(torch.int64).tolist(),
                "custom_means": "attend"}  # `custom` is exported read: 1 = may attend, whatever was typed


# Each rule in code, for the legend's one line: which value of the code's mask becomes the fill.
CODE_RULE_SHORT = {"masked_fill": "True → {fill}", "setitem": "True → {fill}", "where_keep": "False → {fill}",
                   "where_fill": "True → {fill}", "additive": "+ mask", "gate": "0 → {fill}",
                   "sdpa_bool": "False → {fill}", "key_padding": "True → {fill}", "mask_mod": "False → {fill}"}


def code_rule_name(rule: str) -> Msg:
    """A program's masking rule in a few words, as its code reads its mask."""
    names = {"masked_fill": Msg("your code's mask: masked_fill where True (True = blocked)"),
             "setitem": Msg("your code's mask: scores[mask] = fill (True = blocked)"),
             "where_keep": Msg("your code's mask: where(mask, scores, fill) (True = may attend)"),
             "where_fill": Msg("your code's mask: where(mask, fill, scores) (True = blocked)"),
             "additive": Msg("your code's mask: added to the scores (0 = may attend, large negative = blocked)"),
             "gate": Msg("your code's mask: scores · mask (1 = may attend)"),
             "sdpa_bool": Msg("your code's mask: SDPA's attn_mask (True = may attend)"),
             "key_padding": Msg("your code's mask: key_padding_mask (True = blocked)"),
             "mask_mod": Msg("your code's mask: flex_attention's mask_mod and block mask (True = may attend)")}
    return names.get(rule, Msg("your code's own mask"))


def code_rule_says(rule: str, held: str, blocked: bool, fill: str = "") -> Msg:
    """`your code's mask holds True here → filled with -inf (blocked)`: one cell of a program's own mask."""
    if rule == "additive":
        return (Msg("your code's mask holds {held} here → added to the score (blocked)", held=held) if blocked
                else Msg("your code's mask holds {held} here → added to the score (may attend)", held=held))
    if blocked:
        return Msg("your code's mask holds {held} here → filled with {fill} (blocked)", held=held, fill=fill or "?")
    return Msg("your code's mask holds {held} here → kept (may attend)", held=held)


def build_mask(kind: str, key_tokens: tuple[str, ...], n_queries: int, pad_keys: int = 0,
               custom: torch.Tensor | None = None, device: torch.device | str = "cpu",
               window: int | None = None, means: str = "attend") -> MaskSpec | None:
    """The mask of `kind` (AND a custom 0/1 matrix) as a MaskSpec; None when nothing is masked.

    A custom matrix is L×S, or 1×S: one entry per key, the same for every query (broadcast,
    as note 003's `(batch, length)` mask is). With `means="block"` its 1s are the blocked
    cells (1 = padding), so it is negated before the AND.

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
    if means not in MASK_MEANS:
        raise ConfigError(Msg("unknown mask convention {means}; choose one of {names}", means=repr(means),
                              names=", ".join(MASK_MEANS)))
    if custom is not None:
        if tuple(custom.shape) not in ((n_queries, n_keys), (1, n_keys)):
            raise ShapeError(Msg("the mask is {mask} but the scores are {scores}: it needs one entry per query and "
                                 "key ({scores}), or one row with one entry per key (1×{keys})",
                                 mask=shape_text(tuple(custom.shape)), scores=shape_text((n_queries, n_keys)),
                                 keys=n_keys))
        custom = custom.to(device=device, dtype=torch.bool).expand(n_queries, n_keys)  # (L, S): 1×S for every query
        custom = ~custom if means == "block" else custom  # True = may attend from here on
        custom = None if bool(custom.all()) else custom
    if not causal and kept_window is None and padding is None and custom is None:
        return None
    return MaskSpec((n_queries, n_keys), causal, padding, custom, window=kept_window, means=means, device=device)


def padding_keys(key_tokens: tuple[str, ...], pad_keys: int, device: torch.device | str = "cpu"
                 ) -> torch.Tensor:
    """Boolean (S,) vector, True for keys that are padding."""
    pad = torch.tensor([t == PAD_TOKEN for t in key_tokens], dtype=torch.bool, device=device)
    if pad_keys:
        pad[len(key_tokens) - pad_keys:] = True
    return pad


def custom_mask(rows: list[list[float]], means: str = "attend") -> torch.Tensor:
    """Validate a typed 0/1 matrix (as typed: not yet read by its convention); anything else is an error."""
    for i, row in enumerate(rows):  # counted from 0, as the heatmap's cells and `x` count them
        for j, value in enumerate(row):
            if value not in (0.0, 1.0):
                raise ShapeError(Msg("the mask holds {value} at row {i}, column {j} (counted from 0): use 1 where a "
                                     "key is blocked and 0 where a query may attend (--mask-means block)",
                                     value=f"{value:g}", i=i, j=j) if means == "block" else
                                 Msg("the mask holds {value} at row {i}, column {j} (counted from 0): use 1 where a "
                                     "query may attend and 0 where it may not", value=f"{value:g}", i=i, j=j))
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
