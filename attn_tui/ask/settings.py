"""What to compute: the settings and the three kinds of input, as plain frozen data.

Nothing here imports torch, so the app can hold and edit settings before torch loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

# The choices, re-exported where the code has always found them; they are declared in ask/options.py.
from attn_tui.ask.options import DEFAULT_DIM as DEFAULT_DIM
from attn_tui.ask.options import DEVICE_NAMES as DEVICE_NAMES
from attn_tui.ask.options import DTYPE_NAMES as DTYPE_NAMES
from attn_tui.ask.options import FILL_NAMES as FILL_NAMES
from attn_tui.ask.options import MASK_MEANS_NAMES as MASK_MEANS_NAMES
from attn_tui.ask.options import MASK_NAMES as MASK_NAMES
from attn_tui.ask.options import PROJECTION_NAMES as PROJECTION_NAMES
from attn_tui.ask.options import VARIANT_NAMES as VARIANT_NAMES
from attn_tui.ask.options import default

SLIDING_MASKS = ("sliding", "sliding+padding")  # the kinds --window applies to


@dataclass(frozen=True)
class Settings:
    """Every knob of a computation; the same object drives the CLI and the app. Each field's default, range and
    help are declared once, in `ask/options.py`."""

    variant: str = default("variant")
    mask: str = default("mask")  # none | causal | padding | causal+padding | sliding | sliding+padding
    mask_fill: str = default("mask_fill")  # -inf | -1e9
    mask_means: str = default("mask_means")  # attend | block: what a 1 in a custom mask means
    pad_keys: int = default("pad_keys")  # typed matrices: the last N keys are padding
    heads: int = default("heads")  # multihead, gqa (query heads), alibi, sink
    dim: int | None = default("dim")  # model dim for sentences; attention hidden size for additive/concat
    positional: bool = default("positional")
    seed: int = default("seed")
    device: str = default("device")
    dtype: str = default("dtype")
    temperature: float = default("temperature")  # divides the scores; 1 = the variant as written
    projection: str = default("projection")  # learned | identity (Q = K = V = X, as in a first attention lesson)
    rope_base: float = default("rope_base")  # rope: θ_i = base^(−2i/d)
    kv_heads: int = default("kv_heads")  # gqa: key/value heads shared by the query heads (1 = multi-query)
    window: int = default("window")  # sliding masks: query i sees keys i − window < j ≤ i
    tile: int = default("tile")  # flash: keys per tile of the online softmax


@dataclass(frozen=True)
class SentenceInput:
    """A sentence, split on whitespace; Q, K, V come from a seeded embedding."""

    text: str


@dataclass(frozen=True)
class MatrixInput:
    """Hand-typed Q (L×d), K (S×d) and V (S×d_v); K/V may have more rows than Q."""

    q: list[list[float]]
    k: list[list[float]]
    v: list[list[float]]
    query_tokens: tuple[str, ...] | None = None
    key_tokens: tuple[str, ...] | None = None


@dataclass(frozen=True)
class XInput:
    """One typed matrix X (N×d_model) of token vectors: self-attention projects Q, K, V from it."""

    x: list[list[float]]
    tokens: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ModelInput:
    """A real or trained model run on a sentence: which model, and which layer and head to show.

    `target` and `teacher_forcing` apply to the date models only.
    """

    name: str
    text: str
    layer: int = 0
    head: int = 0
    pad_to: int | None = None
    target: str | None = None
    teacher_forcing: bool = False
    device: str = "auto"


@dataclass(frozen=True)
class Request:
    """Settings plus input plus an optional custom 0/1 mask: everything `compute` needs."""

    source: SentenceInput | MatrixInput | XInput
    settings: Settings = field(default_factory=Settings)
    custom_mask: list[list[float]] | None = None
    mask_by_hand: bool = False  # the custom mask was made cell by cell with `x`, not given by a file or sample


Ask = Union[Request, ModelInput]  # what any front end asks the one door for: a variant on an input, or a model
