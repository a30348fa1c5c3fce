"""Compare mode: the same stage under two settings, A (what is asked) and B (one setting changed), and B − A.

Textual-free. A comparison names the one change and derives B's ask from A's, so when
the user edits A the same change is applied again; a head comparison needs no second
computation, it reads the same trace at another head.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from attn_tui.ask.model_request import cache_window, kept_positions
from attn_tui.ask.models import DATE_MODELS, TRANSFORMER_DATE_MODELS
from attn_tui.ask.settings import ModelAsk, VariantAsk
from attn_tui.ask.variants import VARIANTS
from attn_tui.i18n import Msg
from attn_tui.present.grid import Grid, GridStats, TiledCells

if TYPE_CHECKING:
    import numpy as np

    from attn_tui.ask.settings import Ask

DIFF_WHOLE = 1 << 22  # cells up to which B − A's range is computed exactly


@dataclass(frozen=True)
class Comparison:
    """One changed setting: its key, what A and B are called, and (for a head) B's head."""

    key: str  # fill | scale | variant | head | layer | teacher | projection | positional | mask | model | other | cache
    # | gate | repeat (a transformer on its sentence said twice: the classic induction probe, as the head atlas
    # compares)
    a_label: str | Msg
    b_label: str | Msg
    change: tuple[tuple[str, object], ...] = ()  # settings (or ModelAsk fields) B sets
    head: int | None = None  # a head comparison: B is the same trace at this head
    mean_heads: bool = False  # a model comparison: the transformer's alignment averaged over its heads
    layer: int | None = None  # a layer comparison: B is the same trace at this layer
    renamed: tuple[tuple[str, str], ...] = ()  # A's stage → B's where B calls it otherwise (gated → output)

    def b_name(self, name: str) -> str:
        """The stage of B shown beside A's stage `name`: A's gated beside B's ungated output."""
        return dict(self.renamed).get(name, name)

    @property
    def same_trace(self) -> bool:
        """B is A's own trace at another head or layer: nothing is computed for it."""
        return self.head is not None or self.layer is not None

    @property
    def models(self) -> bool:
        """Another date model on the same input: the two alignments side by side, step by step."""
        return self.key == "model"

    def fits(self, a: Ask) -> bool:
        """Whether the change still applies to A (after A was edited, or another source chosen)."""
        model = a.model
        if self.key == "teacher":
            return model is not None and bool(model.target)
        if self.models:
            return model is not None and model.name in DATE_MODELS and model.name != dict(self.change)["name"]
        if self.key in ("layer", "other"):  # a real transformer's: another of its layers, another model
            return model is not None and model.name not in DATE_MODELS and model.name != dict(self.change).get("name")
        if self.key == "cache":
            return model is not None and model.generate > 0
        if self.key == "gate":  # A's gate is on, B's off
            return a.request is not None and a.request.settings.gate
        if self.key == "repeat":
            return model is not None and model.name not in DATE_MODELS and not model.generate
        return a.request is not None or self.key == "head"

    @property
    def title(self) -> Msg:
        return Msg("A: {a}   B: {b}", a=self.a_label, b=self.b_label)

    def b_ask(self, a: Ask) -> Ask:
        """B's ask from A's: the same ask with the change applied (a head comparison: A itself)."""
        model = a.model
        if self.key == "repeat" and model is not None:
            return model.changed({"text": repeated(model.text)})
        if self.same_trace or not self.change:
            return a
        return a.changed(dict(self.change))


def comparisons(a: Ask, heads: int, head: int, layers: int = 1, layer: int = 0,
                others: Sequence[str] = (), windows: Sequence[int | None] = ()) -> list[Comparison]:
    """Every one-setting change that makes sense for A (the ones a learner asks about first).

    A real transformer's A (`layers` of them, `layer` on show; `windows`: each layer's sliding window, named in
    the labels) is compared with its other layers and with each of `others`, the other models opened (their own
    layer and head where they have them)."""
    found: list[Comparison] = []
    model, request = a.model, a.request
    if model is not None:
        found += _model_comparisons(model)
        if model.name not in DATE_MODELS:
            found += _transformer_comparisons(model, layers, layer, others, windows)
        if model.generate:  # a model writing: its whole cache against StreamingLLM's window, or back
            other = "" if model.cache else STREAMING
            found.append(Comparison("cache", _cache(model.cache), _cache(other), (("cache", other),)))
        if model.target:
            on = model.teacher_forcing
            found.append(Comparison("teacher", _forcing(on), _forcing(not on), (("teacher_forcing", not on),)))
    if request is not None:
        found += _variant_comparisons(request)
    for h in range(heads):
        if h != head:
            found.append(Comparison("head", Msg("head {h}", h=head), Msg("head {h}", h=h), head=h))
    return found


def _model_comparisons(a: ModelAsk) -> list[Comparison]:
    """A date model against each other date model; with the transformer on either side, once for its chosen
    head and once for its heads' mean."""
    if a.name not in DATE_MODELS:
        return []
    found = []
    for other in DATE_MODELS:
        if other == a.name:
            continue
        change = (("name", other),)
        found.append(Comparison("model", a.name, other, change))
        transformer = next((n for n in (a.name, other) if n in TRANSFORMER_DATE_MODELS), None)
        if transformer is not None:
            mean = Msg("{model}, mean of the heads", model=transformer)
            found.append(Comparison("model", mean if transformer == a.name else a.name,
                                    mean if transformer == other else other, change, mean_heads=True))
    return found


def _transformer_comparisons(a: ModelAsk, layers: int, layer: int, others: Sequence[str],
                             windows: Sequence[int | None]) -> list[Comparison]:
    """The same head at another layer (read from A's trace), then another model on the same sentence (B starts at
    its layer 0, head 0: its other layers are traced when a place asks for them)."""
    def named(n: int) -> Msg:
        window = windows[n] if n < len(windows) else None
        return Msg("layer {n}", n=n) if window is None else Msg("layer {n}, window {window}", n=n, window=window)

    found = [Comparison("layer", named(layer), named(other), layer=other) for other in range(layers) if other != layer]
    found += [Comparison("other", _short(a.name), _short(other), (("name", other), ("layer", 0), ("head", 0)))
              for other in others if other != a.name and other not in DATE_MODELS]
    if not a.generate:
        found.append(Comparison("repeat", Msg("the sentence"), Msg("the sentence twice")))
    return found


def repeated(text: str) -> str:
    """The sentence said twice: its second half repeats the first, so an induction head attends to the token after
    each token's first copy (the repeated sequence TransformerLens's induction probes use)."""
    return f"{text} {text}"


def _short(name: str) -> str:
    """A model's name as a label: a folder by its last part (a long path would push B off the title)."""
    tail = name.rstrip("/").rsplit("/", 1)[-1] or name
    return tail if len(tail) <= 30 else tail[:29] + "…"


STREAMING = "window:8,sinks:4"  # the window compare mode sets against a whole cache


def _cache(cache: str) -> Msg:
    return Msg("StreamingLLM {cache}", cache=cache) if cache else Msg("the whole cache")


def _forcing(on: bool) -> Msg:
    return Msg("teacher forcing on") if on else Msg("teacher forcing off")


def _variant_comparisons(a: VariantAsk) -> list[Comparison]:
    s = a.settings
    found = []
    masked = s.mask != "none" or a.custom_mask is not None
    if masked:
        other = "-1e9" if s.mask_fill == "-inf" else "-inf"
        found.append(Comparison("fill", Msg("fill {fill}", fill=s.mask_fill), Msg("fill {fill}", fill=other),
                                (("mask_fill", other),)))
    pairs = {"scaled_dot": "dot", "dot": "scaled_dot", "additive": "general", "general": "additive",
             "concat": "additive"}
    if s.variant in pairs:
        other = pairs[s.variant]
        key = "scale" if {s.variant, other} == {"dot", "scaled_dot"} else "variant"
        found.append(Comparison(key, s.variant, other, (("variant", other),)))
    if s.gate:  # the gate off: B's plain output beside A's gated one, B − A what the gate held back
        found.append(Comparison("gate", Msg("gate on"), Msg("gate off"), (("gate", False),),
                                renamed=(("gated", "output"),)))
    mask = "none" if s.mask != "none" else "causal"
    found.append(Comparison("mask", Msg("mask {mask}", mask=s.mask), Msg("mask {mask}", mask=mask), (("mask", mask),)))
    if not a.source.typed:  # token vectors: positions and projections apply
        found.append(Comparison("positional", _positions(s.positional), _positions(not s.positional),
                                (("positional", not s.positional),)))
        if not VARIANTS[s.variant].takes_x:  # a variant that projects X itself reads no projection setting
            other = "identity" if s.projection == "learned" else "learned"
            found.append(Comparison("projection", Msg("projection {p}", p=s.projection), Msg("projection {p}", p=other),
                                    (("projection", other),)))
    return found


def _positions(on: bool) -> Msg:
    return Msg("positions on") if on else Msg("positions off")


class DiffCells:
    """B − A, read a block at a time from both grids (so a lazy stage stays lazy)."""

    def __init__(self, a: Grid, b: Grid) -> None:
        self.a, self.b = a, b
        self.shape = (a.rows, a.cols)

    def block(self, r0: int, r1: int, c0: int, c1: int) -> np.ndarray:
        import numpy as np

        with np.errstate(invalid="ignore"):
            out: np.ndarray = self.b.block(r0, r1, c0, c1) - self.a.block(r0, r1, c0, c1)
        return out


def diff_grid(a: Grid, b: Grid) -> Grid | None:
    """B − A on A's axes, masked where both are masked; None when the shapes differ."""
    if (a.rows, a.cols) != (b.rows, b.cols):
        return None
    import numpy as np

    cells = DiffCells(a, b)
    masked = None
    if a.masked is not None and b.masked is not None:
        masked = TiledCells((a.rows, a.cols), lambda r0, r1, c0, c1: (
            a.masked_block(r0, r1, c0, c1) & b.masked_block(r0, r1, c0, c1)), dtype=bool)  # type: ignore[operator]
    if a.rows * a.cols <= DIFF_WHOLE:
        values = cells.block(0, a.rows, 0, a.cols)
        shown = np.isfinite(values)
        if masked is not None:
            shown &= ~masked.block(0, a.rows, 0, a.cols)
        lo, hi = (float(values[shown].min()), float(values[shown].max())) if shown.any() else (0.0, 0.0)
        marks = {"masked"} if masked is not None and bool(masked.block(0, a.rows, 0, a.cols).any()) else set()
        bound = max(abs(lo), abs(hi)) or 1.0  # symmetric, so no difference is the scale's neutral middle
        stats = GridStats(-bound, bound, frozenset(marks))
    else:  # too large to walk: the widest |B − A| the two ranges allow
        bound = max(abs(x) for x in (*a.finite_range(), *b.finite_range()) if math.isfinite(x)) * 2
        stats = GridStats(-bound, bound, frozenset())
    return Grid(cells, a.row_labels, a.col_labels, a.row_axis, a.col_axis, masked, stats=stats)


def evicted_diff(a: Grid, b: Grid, a_cache: str, b_cache: str) -> Grid | None:
    """B − A of a step's weights once StreamingLLM has evicted keys: the windowed side's row laid on the whole
    cache's keys, 0 on the keys it evicted, so B − A shows the weight the eviction moved (−A where it evicted).
    None when neither side is a window that evicted here."""
    if a.rows != b.rows:
        return None
    if b.cols < a.cols and b_cache:
        return diff_grid(a, _spread(b, a, kept_positions(a.cols, cache_window(b_cache))))
    if a.cols < b.cols and a_cache:
        return diff_grid(_spread(a, b, kept_positions(b.cols, cache_window(a_cache))), b)
    return None


def _spread(window: Grid, whole: Grid, kept: list[int]) -> Grid:
    """`window`'s columns (the kept positions, in order) on `whole`'s keys, 0 on the evicted ones."""
    import numpy as np

    values = np.zeros((whole.rows, whole.cols))
    if len(kept) == window.cols:
        values[:, kept] = window.block(0, window.rows, 0, window.cols)
    return replace(window, data=values, col_labels=whole.col_labels, masked=None, stats=None,
                   special_cols=whole.special_cols, pad_cols=frozenset())
