"""What to compute: the settings and the three kinds of input, as plain frozen data.

Nothing here imports torch, so the app can hold and edit settings before torch loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

VARIANT_NAMES = ("dot", "scaled_dot", "general", "additive", "concat", "multihead", "rope", "gqa", "alibi", "sink",
                 "flash")
# The choices of each setting, torch-free so the CLI and the app's first screen can offer them.
MASK_NAMES = ("none", "causal", "padding", "causal+padding", "sliding", "sliding+padding")
SLIDING_MASKS = ("sliding", "sliding+padding")  # the kinds --window applies to
PROJECTION_NAMES = ("learned", "identity")  # from a sentence or X: seeded W_q, W_k, W_v, or Q = K = V = X
FILL_NAMES = ("-inf", "-1e9")
# What a 1 in a custom mask means: torch's SDPA (and the app) read 1 = may attend; some notes (seed 003) write
# 1 = padding, the key is blocked. The setting says which, so a mask typed the note's way is read the note's way.
MASK_MEANS_NAMES = ("attend", "block")
DEVICE_NAMES = ("auto", "cpu", "cuda")
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16")
DEFAULT_DIM = 8


@dataclass(frozen=True)
class Settings:
    """Every knob of a computation; the same object drives the CLI and the app."""

    variant: str = "scaled_dot"
    mask: str = "none"  # none | causal | padding | causal+padding | sliding | sliding+padding
    mask_fill: str = "-inf"  # -inf | -1e9
    mask_means: str = "attend"  # attend | block: what a 1 in a custom mask means (1 = may attend, or 1 = blocked)
    pad_keys: int = 0  # typed matrices: the last N keys are padding
    heads: int = 2  # multihead, gqa (query heads), alibi, sink
    dim: int | None = None  # model dim for sentences; attention hidden size for additive/concat
    positional: bool = False
    seed: int = 0
    device: str = "auto"
    dtype: str = "float32"
    temperature: float = 1.0  # divides the scores; 1 = the variant as written
    projection: str = "learned"  # learned | identity (Q = K = V = X, as in a first attention lesson)
    rope_base: float = 10000.0  # rope: θ_i = base^(−2i/d)
    kv_heads: int = 1  # gqa: key/value heads shared by the query heads (1 = multi-query)
    window: int = 3  # sliding masks: query i sees keys i − window < j ≤ i
    tile: int = 4  # flash: keys per tile of the online softmax


@dataclass(frozen=True)
class SentenceInput:
    """A sentence, split on whitespace; Q, K, V come from a seeded embedding."""

    text: str

    @property
    def kind(self) -> str:
        """What the session file calls this input: sentence | matrices | x."""
        return "sentence"

    @property
    def sentence(self) -> str | None:
        """The sentence typed, or None for typed matrices."""
        return self.text

    @property
    def shape(self) -> tuple[int, int]:
        """(queries, keys): a custom mask fits an input of this shape."""
        return len(self.text.split()), len(self.text.split())

    @property
    def matrices(self) -> dict[str, tuple[list[list[float]], tuple[str, ...] | None]]:
        """The typed matrices by name (Q, K, V or X), each with its row names: none, a sentence is typed."""
        return {}


@dataclass(frozen=True)
class MatrixInput:
    """Hand-typed Q (L×d), K (S×d) and V (S×d_v); K/V may have more rows than Q."""

    q: list[list[float]]
    k: list[list[float]]
    v: list[list[float]]
    query_tokens: tuple[str, ...] | None = None
    key_tokens: tuple[str, ...] | None = None

    @property
    def kind(self) -> str:
        return "matrices"

    @property
    def sentence(self) -> str | None:
        return None

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.q), len(self.k)

    @property
    def matrices(self) -> dict[str, tuple[list[list[float]], tuple[str, ...] | None]]:
        return {"Q": (self.q, self.query_tokens), "K": (self.k, self.key_tokens), "V": (self.v, self.key_tokens)}


@dataclass(frozen=True)
class XInput:
    """One typed matrix X (N×d_model) of token vectors: self-attention projects Q, K, V from it."""

    x: list[list[float]]
    tokens: tuple[str, ...] | None = None

    @property
    def kind(self) -> str:
        return "x"

    @property
    def sentence(self) -> str | None:
        return None

    @property
    def shape(self) -> tuple[int, int]:
        return len(self.x), len(self.x)

    @property
    def matrices(self) -> dict[str, tuple[list[list[float]], tuple[str, ...] | None]]:
        return {"X": (self.x, self.tokens)}


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

    @property
    def model(self) -> ModelInput | None:
        """The model asked for: this ask itself (a variants' Request answers None)."""
        return self

    @property
    def request(self) -> Request | None:
        """The variants' ask: None, a model is asked for."""
        return None


@dataclass(frozen=True)
class Request:
    """Settings plus input plus an optional custom 0/1 mask: everything `compute` needs."""

    source: SentenceInput | MatrixInput | XInput
    settings: Settings = field(default_factory=Settings)
    custom_mask: list[list[float]] | None = None
    mask_by_hand: bool = False  # the custom mask was made cell by cell with `x`, not given by a file or sample

    @property
    def model(self) -> ModelInput | None:
        """None: the attention variants are asked for, not a model."""
        return None

    @property
    def request(self) -> Request | None:
        """The variants' ask: this ask itself."""
        return self


Ask = Union[Request, ModelInput]  # what any front end asks the one door for: a variant on an input, or a model
