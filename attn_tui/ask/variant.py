"""What a variant declares about itself (`Variant`) and the sizes its footprint is counted from (`Sizes`).

A variant's package (`attention/variants/<name>/__init__.py`) fills one `Variant` with everything the front ends
and the budget read before torch loads: its stages, its shape rules, the settings it reads and the ones it
declares, its footprint and its refusals. Torch-free, like the rest of `ask`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from attn_tui.ask.option import Option
from attn_tui.i18n import N_


class Valued(Protocol):
    """Settings as a variant reads them: any setting by name (`ask.settings.Settings`)."""

    def value(self, name: str) -> Any: ...


# The default refusal of a variant whose stages are held whole (`lazy=False`) for an input past LAZY_CELLS.
WHOLE_STAGES = N_("{variant} holds each of its stages whole so they can be stepped through: at most {most} query × "
                  "key cells, here {cells}; shorten the input")


@dataclass(frozen=True)
class Sizes:
    """The sizes an ask implies: L queries, S keys, widths, heads, attention hidden size, and the settings (a
    variant's own, such as flash's tile, shape its footprint too)."""

    queries: int
    keys: int
    d_q: int
    d_k: int
    d_v: int
    hidden: int
    heads: int
    settings: Valued

    def value(self, name: str) -> Any:  # the setting's own type, which its Option declares
        return self.settings.value(name)


@dataclass(frozen=True, kw_only=True)
class Variant:
    """One variant: its stage names (after the input stages), its rules, its settings and its run function.

    A variant that splits heads (`per_head`) ends with `concat` only when it has several.

    `same_width`: Q and K must share their last dimension (no learned projection between them). `takes_x`: projects
    Q, K, V itself from one X (multihead, gqa). `per_head`: splits Q, K, V into `--heads` heads by columns.
    `reads`: the shared settings only some variants read (`heads`, `rope_base`); `own`: the settings this variant
    declares (its flag, pane row and checks are made from them). `lazy`: its score stages can be read by tiles, so
    it runs on inputs of any length. `score_based`: takes a soft cap, a QK-norm and the output gate; `unscored` says
    why not where the general words would mislead. `maps`: score maps per head a soft cap is applied to.
    `footprint`: the numbers each of its stages and parameters holds, by part; `more_stages`: stages beyond one of
    each name per head (a tile's, a token's); `check`: refuses sizes it cannot show, before anything is made.
    `explains`: its own explanation of a shared stage (scores, weights …), by stage name.
    """

    name: str
    title: str
    order: int  # its place in the menus and the CLI's list
    stages: tuple[str, ...]
    footprint: Callable[[Sizes], dict[str, int]]
    same_width: bool = True
    takes_x: bool = False
    uses_hidden: bool = False  # --dim sets its attention hidden size even for typed Q, K, V
    learned: bool = True  # has seeded parameters of its own, even on typed Q, K, V
    per_head: bool = False
    reads: tuple[str, ...] = ()
    own: tuple[Option, ...] = ()
    lazy: bool = True
    long_input: str = WHOLE_STAGES  # marked with N_: why an input past LAZY_CELLS is refused (lazy=False)
    score_based: bool = True  # its scores are q·k: --softcap, --qk-norm and --gate apply (attention/variants/modifiers)
    unscored: str = ""  # marked with N_, {option}: why the score modifiers do not apply, in this variant's words
    maps: int = 1
    query_norm_parts: int = 0  # query rows a QK-norm adds per head beyond the usual (mla rebuilds each whole query)
    more_stages: Callable[[Sizes], int] | None = None
    check: Callable[[Sizes], None] | None = None
    explains: Mapping[str, str] = field(default_factory=dict, compare=False)

    @property
    def options(self) -> tuple[str, ...]:
        """Every setting this variant reads beyond the ones every variant reads."""
        return self.reads + tuple(option.name for option in self.own)

    @property
    def has_heads(self) -> bool:
        """Several heads, chosen with --heads and shown one by one."""
        return self.takes_x or self.per_head

    @property
    def run(self) -> Callable[..., object]:
        """`compute.run` of the variant's package, imported on first use (it imports torch)."""
        module = importlib.import_module(f"attn_tui.attention.variants.{self.name}.compute")
        return module.run  # type: ignore[no-any-return]


def score_tail(z: Sizes, score_stages: int) -> dict[str, int]:
    """The score stages (scores … weights) and the output of a one-head variant."""
    return {"score stages": score_stages * z.queries * z.keys, "output": z.queries * z.d_v}


def split_tail(z: Sizes, score_stages: int) -> dict[str, int]:
    """A variant that splits Q, K, V into heads: every head's score stages, the outputs and their concat."""
    return {"score stages": score_stages * z.heads * z.queries * z.keys, "output": 2 * z.queries * z.d_v}
