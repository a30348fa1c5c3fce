"""A long scaled_dot_product_attention call laid out lazily: its score stages are computed by tiles, for the screen.

Past LAZY_CELLS scores (8 heads of 1,024 tokens) nothing (L, S) is held: the scores, the
scaled scores, the float mask added to them, the masked scores and the weights of any tile
are computed when asked for (`trace.lazy`) from what makes them: the call's queries and keys,
its mask as the code passed it (never expanded to every head), its causal flag, and each row's
log-sum-exp, kept by one pass over blocks of query rows made here (with the stages' ranges and
the kernel's output beside A·V). That recipe holds tensors and numbers only, so it crosses from
`attn-tui trace`'s child to attn-tui (wire.py) and the stages are rebuilt lazily there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

from attn_tui.attention.attend import softmax_rows
from attn_tui.i18n import Msg
from attn_tui.sources.recorder.found import DotOp, Found, GivenOp, Role, ScaleOp, SoftmaxOp, SumOp
from attn_tui.sources.recorder.lazy_slices import Slices, fold_kept
from attn_tui.sources.recorder.maskparts import by_parts
from attn_tui.sources.recorder.slices import Layout
from attn_tui.trace import ops
from attn_tui.trace.lazy import ScoreTiles
from attn_tui.trace.masks import MaskSpec, code_rule_says, softmax_dtype
from attn_tui.trace.stage_stats import StageStats
from attn_tui.trace.values import fold_heads, fold_row_sums

LAZY_CELLS = 1 << 22  # scores of one call (all heads) above which its score stages are computed by tiles
PASS_CELLS = 1 << 22  # scores computed at once by the streaming pass
PARTS_CELLS = 1 << 24  # (L, S) cells of a mask up to which its reasons (causal, window, padding) are looked for
ALL = "all"  # a mask given that allows every cell
MASK_KINDS = ("bool", "gate", "bias")  # attn_mask as SDPA reads it: True = attend; 0 / -inf; a float added


@dataclass(eq=False)
class SdpaRecipe:
    """What a long SDPA call's score stages are made of, and nothing else: tensors, numbers, flags.

    `mask` is the attn_mask as the code passed it, its leading dimensions folded to one
    (m, L or 1, S or 1); slice n reads mask `which[n]`. A "gate" mask holds 0 where a query
    may attend and -inf (or a large negative) where not; a "bias" mask is added to the scores.
    """

    query: torch.Tensor  # (n, L, E)
    key: torch.Tensor  # (n, S, E)
    factor: float
    causal: bool
    lse: torch.Tensor  # (n, L) log-sum-exp of each masked row; -inf for a row with nothing to attend
    mask: torch.Tensor | None = None  # (m, L | 1, S | 1) as given
    which: torch.Tensor | None = None  # (n,) the mask each slice reads
    mask_kind: str = ""  # one of MASK_KINDS, or "" without a mask

    @property
    def shape(self) -> tuple[int, int]:
        return int(self.query.shape[-2]), int(self.key.shape[-2])

    @property
    def last(self) -> str:
        """The stage the mask applies to."""
        return "biased" if self.mask_kind == "bias" else "scaled"

    def _mask_tile(self, rows: slice, cols: slice) -> torch.Tensor:
        """(n, rows, cols) of the mask as given, every slice's own (a broadcast, not a copy per head)."""
        assert self.mask is not None and self.which is not None
        part = self.mask[:, rows if self.mask.shape[1] > 1 else slice(None), cols if self.mask.shape[2] > 1 else
                         slice(None)]
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        return part[self.which].expand(-1, r1 - r0, c1 - c0)

    def allow(self, rows: slice, cols: slice) -> torch.Tensor | None:
        """(n, rows, cols) True = may attend; None when nothing is masked."""
        out = None
        if self.mask_kind in ("bool", "gate"):
            given = self._mask_tile(rows, cols)
            out = given if given.dtype == torch.bool else given == 0
        if self.causal:
            r0, r1, _ = rows.indices(self.shape[0])
            c0, c1, _ = cols.indices(self.shape[1])
            causal = torch.arange(c0, c1)[None, :] <= torch.arange(r0, r1)[:, None]  # (rows, cols)
            out = causal.expand(self.query.shape[0], -1, -1) if out is None else out & causal
        return out

    def pre(self, rows: slice, cols: slice) -> dict[str, torch.Tensor]:
        """The stages before the mask on one tile, for every slice: scores, scaled (and bias, biased)."""
        scores = self.query[:, rows] @ self.key[:, cols].transpose(-2, -1)  # (n, rows, cols)
        out = {"scores": scores, "scaled": scores * self.factor}
        if self.mask_kind == "bias":
            bias = self._mask_tile(rows, cols)
            out["bias"] = bias
            out["biased"] = out["scaled"] + bias.to(scores.device, scores.dtype)
        return out

    def family(self) -> SdpaTiles:
        return SdpaTiles(self.pre, self.last, self.shape, None, "-inf", 1.0, lse=self.lse, recipe=self)

    def held(self, n: int, i: int, j: int) -> torch.Tensor:
        """The mask value slice n's cell (i, j) read, as the code held it."""
        assert self.mask is not None and self.which is not None
        mask = self.mask[int(self.which[n])]
        return mask[i if mask.shape[0] > 1 else 0, j if mask.shape[1] > 1 else 0]


@dataclass(eq=False)
class SdpaTiles(ScoreTiles):
    """The score stages of one SDPA call: each slice masked by its own mask (a head or batch item may differ)."""

    recipe: SdpaRecipe | None = None

    def masked(self, before: torch.Tensor, rows: slice, cols: slice) -> torch.Tensor:
        assert self.recipe is not None
        promoted = before.to(softmax_dtype(before.dtype))
        allow = self.recipe.allow(rows, cols)
        return promoted if allow is None else promoted.masked_fill(~allow.to(promoted.device), -math.inf)


@dataclass(frozen=True, eq=False)
class TiledSdpaMask(MaskSpec):
    """The mask slice `slice_n` of a long SDPA call read, by tiles from its recipe (never whole)."""

    recipe: SdpaRecipe | None = None
    slice_n: int = 0

    def tile(self, rows: slice, cols: slice) -> torch.Tensor:
        assert self.recipe is not None
        r0, r1, _ = rows.indices(self.shape[0])
        c0, c1, _ = cols.indices(self.shape[1])
        allow = self.recipe.allow(slice(r0, r1), slice(c0, c1))
        return torch.ones(r1 - r0, c1 - c0, dtype=torch.bool) if allow is None else allow[self.slice_n]

    def reasons(self, i: int, j: int) -> list[Msg]:
        """Why cell (i, j) is hidden: causal order, and the mask as the code passed it when it blocks the cell."""
        assert self.recipe is not None
        found = []
        if self.causal and j > i:
            found.append(Msg("future key: key {j} comes after query {i} (causal: no looking ahead)", i=i, j=j))
        if self.recipe.mask_kind in ("bool", "gate"):
            held = self.recipe.held(self.slice_n, i, j)
            if not bool(held) if held.dtype == torch.bool else float(held) != 0:
                said = self.as_given(i, j)
                found.extend([said] if said is not None else [])
        return found

    def as_given(self, i: int, j: int) -> Msg | None:
        assert self.recipe is not None
        if self.recipe.mask is None:
            return None
        value = self.recipe.held(self.slice_n, i, j)
        held = str(bool(value)) if value.dtype == torch.bool else f"{float(value) + 0.0:g}"
        blocked = not bool(self.tile(slice(i, i + 1), slice(j, j + 1))[0, 0])
        return code_rule_says(self.code_rule, held, blocked, self.code_fill)


@dataclass(frozen=True)
class SdpaMaskRole(GivenOp):
    """The masked stage's op: each slice's mask by its reasons when they rebuild it (maskparts), else by tiles."""

    source: str
    recipe: SdpaRecipe
    rule: str
    told: dict[int, object] = field(default_factory=dict, compare=False)  # the parts, per mask given

    def core(self, at: Any, n: int, h: int | None, heads: int) -> ops.Op:
        recipe = self.recipe
        fill = "-inf" if self.rule else ""
        spec: MaskSpec = TiledSdpaMask(recipe.shape, causal=recipe.causal, code_rule=self.rule, code_fill=fill,
                                       recipe=recipe, slice_n=n)
        if recipe.mask is not None and recipe.which is not None and not recipe.causal:
            which = int(recipe.which[n])
            given = recipe.mask[which].expand(recipe.shape)  # (L, S) a view of the mask as the code passed it
            if which not in self.told:
                allowed = recipe.mask[which] if recipe.mask.dtype == torch.bool else recipe.mask[which] == 0
                small = recipe.shape[0] * recipe.shape[1] <= PARTS_CELLS
                self.told[which] = ALL if bool(allowed.all()) else by_parts(allowed.expand(recipe.shape)) if small \
                    else None
            told = self.told[which]
            if told is ALL:  # this slice's mask hides nothing: no mask, as the whole layout says
                return ops.Masking(at(self.source, h), None, "-inf")
            if isinstance(told, MaskSpec):  # the parts rebuild the mask exactly: its tiles come from them
                spec = MaskSpec(recipe.shape, causal=told.causal, padding=told.padding, window=told.window,
                                code_mask=given, code_rule=self.rule, code_fill=fill)
        return ops.Masking(at(self.source, h), spec, "-inf")


def compact_mask(mask: torch.Tensor, lead: tuple[int, ...], lay: Layout) -> tuple[torch.Tensor, torch.Tensor]:
    """attn_mask (…, L | 1, S | 1), broadcastable to (*lead, L, S), as (m, L | 1, S | 1) and each slice's index."""
    padded = mask.reshape((1,) * (len(lead) + 2 - mask.dim()) + tuple(mask.shape))
    for d in range(padded.dim()):  # a dimension the code only broadcast (stride 0) is kept once, never copied
        if padded.stride(d) == 0 and padded.shape[d] > 1:
            padded = padded.narrow(d, 0, 1)
    folded = padded.reshape(-1, *padded.shape[-2:]).cpu()  # (m, L | 1, S | 1)
    ids = torch.arange(folded.shape[0]).reshape(padded.shape[:-2]).expand(*lead)
    return folded, lay.flat(ids).reshape(-1)  # (n,)


def mask_kind(mask: torch.Tensor | None, mask_at: float) -> str:
    if mask is None:
        return ""
    if mask.dtype == torch.bool:
        return "bool"
    return "gate" if bool(((mask == 0) | (mask <= mask_at)).all()) else "bias"


def lay_out_lazily(found: Found, recipe: SdpaRecipe, names: tuple[str, str], kernel: torch.Tensor,
                   values: torch.Tensor, origin: Any, formulas: dict[str, Msg]) -> float:
    """The roles of a long call: scores … weights lazy, one streaming pass for their stats and the lse.

    `kernel` (n, L, dv) is the call's own output, `values` (n, S, dv) its value rows; returns
    the largest difference between the kernel's output and A·V recomputed from the weights.
    """
    family = recipe.family()
    count = recipe.query.shape[0]
    length, keys = recipe.shape
    stage_names = ["scores", "scaled", *(("bias", "biased") if recipe.mask_kind == "bias" else ()), "masked",
                   "weights"]
    stats = {name: [StageStats() for _ in range(count)] for name in stage_names}
    rows_at_once = max(1, PASS_CELLS // max(1, count * keys))
    gap = 0.0
    exact = values.to(torch.promote_types(values.dtype, torch.float32))  # A·V in at least float32 (expand.exact_dtype)
    for start in range(0, length, rows_at_once):
        rows = slice(start, min(length, start + rows_at_once))
        made = family.pre(rows, slice(None))
        kept = recipe.allow(rows, slice(None))  # (n, rows, S) or None
        kept = None if kept is None else kept.to(recipe.query.device)
        masked = family.masked(made[recipe.last], rows, slice(None))
        weights, recipe.lse[:, rows], *_, empty = softmax_rows(masked)  # weights (n, rows, S)
        again = weights.to(exact.dtype) @ exact  # (n, rows, dv)
        if again.numel():
            gap = max(gap, float((kernel[:, rows].to(again.dtype) - again).abs().nan_to_num(nan=math.inf).amax()))
        for name, block in made.items():
            fold_heads(stats[name], block)
        for name, block in (("masked", masked), ("weights", weights)):
            if kept is None:
                fold_heads(stats[name], block)
            else:  # -∞ where the mask hides a cell is the fill, not an overflow
                fold_kept(stats[name], block, kept)
        fold_row_sums(stats["weights"], weights, start, empty, None)
    family.lse = recipe.lse
    q_name, k_name = names
    dtype = recipe.query.dtype
    wide = softmax_dtype(dtype)

    def lazy_role(name: str, op: Any, kind: torch.dtype) -> str:
        return found.add(Role(name, Slices(family, name, kind, recipe.query.device),  # type: ignore[arg-type]
                              op, origin, formulas[name], ("query", "key"), stats=stats[name]))

    lazy_role("scores", DotOp(q_name, k_name), dtype)
    last = lazy_role("scaled", ScaleOp("scores", recipe.factor, Msg("SDPA's scale")), dtype)
    if recipe.mask_kind == "bias":
        assert recipe.mask is not None
        lazy_role("bias", GivenOp(Msg("attn_mask, added to the scores")), recipe.mask.dtype)
        last = lazy_role("biased", SumOp(("scaled", "bias")), dtype)
    if recipe.causal or recipe.mask_kind in ("bool", "gate"):
        rule = {"bool": "sdpa_bool", "gate": "additive"}.get(recipe.mask_kind, "") if not recipe.causal else ""
        last = lazy_role("masked", SdpaMaskRole("", last, recipe, rule), wide)
    lazy_role("weights", SoftmaxOp(last), wide)
    return gap
