"""Flash attention: scaled dot computed by key tiles with an online softmax.

The declaration: everything the front ends read before torch loads. The math is `compute.py`;
the inspector's arithmetic of its own ops is `explain.py`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from attn_tui.ask.option import whole
from attn_tui.ask.variant import Sizes, Variant
from attn_tui.errors import ConfigError
from attn_tui.i18n import N_, NP_, Msg
from attn_tui.trace.op import Op
from attn_tui.trace.place import Place
from attn_tui.trace.stage_kind import StageKind

if TYPE_CHECKING:
    from attn_tui.trace.masks import MaskSpec


@dataclass(frozen=True)
class TileScores(Op):
    """out[i, c] = (q_i·k_{offset+c})·factor / T where `mask` (the tile's part) allows, the fill where not."""

    masks: ClassVar[bool] = True

    query: Place
    key: Place
    offset: int
    factor: float
    mask: MaskSpec | None
    fill: str
    temperature: float = 1.0


@dataclass(frozen=True)
class RunningMax(Op):
    """out[i, 0] = max(previous[i, 0], max_c tile[i, c]): the largest score seen so far (−∞ before the first)."""

    starts_infinite: ClassVar[bool] = True

    tile: Place
    previous: Place | None


@dataclass(frozen=True)
class Rescale(Op):
    """out[i, 0] = exp(previous[i, 0] − current[i, 0]): how much the sums so far shrink (0 before the first)."""

    current: Place
    previous: Place | None


@dataclass(frozen=True)
class Denominator(Op):
    """out[i, 0] = α[i]·previous[i, 0] + Σ_c exp(tile[i, c] − m[i]): the running softmax denominator l."""

    tile: Place
    max: Place
    rescale: Place
    previous: Place | None


@dataclass(frozen=True)
class Accumulate(Op):
    """out[i, j] = α[i]·previous[i, j] + Σ_c exp(tile[i, c] − m[i])·values[offset + c, j]: the unnormalised output."""

    tile: Place
    max: Place
    rescale: Place
    previous: Place | None
    values: Place
    offset: int


@dataclass(frozen=True)
class Normalise(Op):
    """out[i, j] = accumulator[i, j] / denominator[i, 0]; 0 where the denominator is 0 (nothing to attend)."""

    accumulator: Place
    denominator: Place


KINDS = (
    StageKind("tile_scores", "S_t", NP_("stage", "tile_scores"), N_(
        "Flash attention never builds the whole score matrix: it reads the keys a tile at a time. These are "
        "the scaled, masked scores of every query against this tile's keys only.")),
    StageKind("running_max", "m", NP_("stage", "running_max"), N_(
        "For each query, the largest score seen so far. Softmax subtracts the row's maximum to avoid overflow; "
        "here the maximum is only known up to the current tile, so it may still grow.")),
    StageKind("rescale", "α", NP_("stage", "rescale"), N_(
        "When a tile raises a row's maximum, everything summed with the old maximum is too large by exp(m_old "
        "− m_new). This factor shrinks the running sum and output; it is 1 when the maximum did not change."),
        colour_scale="sequential"),
    StageKind("denominator", "l", NP_("stage", "denominator"), N_(
        "The softmax denominator so far: the old sum, rescaled, plus the exponentials of this tile. After the "
        "last tile it is the full Σ_k exp(s_k − max)."),
        colour_scale="sequential"),
    StageKind("accumulator", "Õ", NP_("stage", "accumulator"), N_(
        "The output so far, not yet divided: the old accumulator, rescaled, plus this tile's exponentials times "
        "its value rows. Only this and two numbers per row are kept between tiles.")),
)


MAX_TILES = 1024  # each tile is five stages, and the app steps through them one by one
TILE = whole("tile", 4, 1, 100_000, "T", NP_("setting", "tile"),
             N_("flash: keys per tile of the online softmax (default 4)"))


def _tiles(z: Sizes) -> int:
    return -(-z.keys // max(1, int(z.value("tile"))))


def _footprint(z: Sizes) -> dict[str, int]:
    return {"tile stages": z.queries * z.keys + _tiles(z) * z.queries * (3 + z.d_v), "output": z.queries * z.d_v}


def _check(z: Sizes) -> None:
    """Five stages a tile: `--tile 1` on 16k keys would be 80k stages and a minute of Python, so the number of
    tiles is bounded like the number of tokens, before any of them is made."""
    tiles = _tiles(z)
    if tiles > MAX_TILES:
        raise ConfigError(Msg("--tile {tile} cuts {keys} keys into {tiles} tiles; attn-tui steps through at most "
                              "{most}: use --tile {least} or more", tile=z.value("tile"), keys=f"{z.keys:,}",
                              tiles=f"{tiles:,}", most=f"{MAX_TILES:,}", least=-(-z.keys // MAX_TILES)))


VARIANT = Variant(
    name="flash", title="Flash (online softmax by key tiles)", order=110,
    stages=("query", "key", "value", "tile_scores", "running_max", "rescale", "denominator", "accumulator", "output"),
    footprint=_footprint, learned=False, own=(TILE,), lazy=False, score_based=False,
    long_input=N_("{variant} keeps every tile's stages so they can be stepped through: at most {most} query × key "
                  "cells, here {cells}; scaled_dot computes the same output for long inputs"),
    more_stages=lambda z: 5 * (_tiles(z) - 1), check=_check,
    explains={
        "output": N_(
        "Dividing the accumulator by the denominator once, at the end, gives exactly softmax(QKᵀ/√d_k)·V. The "
        "weight matrix never existed, which is why flash attention needs memory linear in the length."),
    },
)
