"""What a family tells the shared layer tracer about one attention layer: a small description, nothing more.

A family adapter (bert.py, gpt2.py, llama.py, gemma.py) reads its own config and weights
into a `LayerSpec`; `tracer.py` turns any LayerSpec into the same stages, so what differs
between families is only how they store their parameters, never how a layer is traced.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from attn_tui.i18n import N_, Msg

if TYPE_CHECKING:
    import torch

    from attn_tui.sources.model_run import LoadedModel, ModelRun
    from attn_tui.trace.stage import Trace


@dataclass(frozen=True)
class NormSpec:
    """A norm on q or k: per head (Qwen3, Gemma 3: one weight over a head's dimensions) or over the whole
    projection before it is split into heads (OLMo-2: one weight over all heads' dimensions together)."""

    kind: str  # rms | layer
    weight: torch.Tensor  # (d_h,) per head; (count·d_h,) over the projection
    eps: float
    bias: torch.Tensor | None = None  # as weight: layer norm only
    offset: float = 0.0  # 1 where the model scales by (1 + weight), as Gemma does
    scope: str = "head"  # head | projection: what one norm's mean runs over


@dataclass(frozen=True)
class RotarySpec:
    """Rotary position embedding as the model applies it: base, the share of dimensions turned, the pairing.

    `cos` and `sin` (N, rotated) are the model's own where it gives them (any rope scaling
    included); otherwise the tracer computes them from `base`.
    """

    base: float
    fraction: float = 1.0
    interleaved: bool = False
    cos: torch.Tensor | None = None  # (N, rotated)
    sin: torch.Tensor | None = None  # (N, rotated)
    scaling: float = 1.0  # the model's attention_scaling on cos and sin (already in cos/sin when given)


@dataclass(frozen=True)
class FusedRows:
    """A fused q/k/v projection as the model names it (Phi-3's `qkv_proj`, GPT-NeoX's `query_key_value`), and
    the first of the d_h rows that a part's head (q) or key/value head (k, v) takes from it: what the
    projection's formula says, so a reader finds the head's rows in the checkpoint."""

    module: str
    first_row: Callable[[str, int], int]  # (part, q head or kv head) → its first row in the fused weight


@dataclass(frozen=True)
class LayerSpec:
    """One attention layer, as the tracer needs it.

    `weights` holds W_q (heads·d_h, d), W_k and W_v (kv_heads·d_h, d) and, where the
    model has them, b_q, b_k, b_v: a fused projection is split by its family's adapter
    into these rows, so the inspector's `Linear` reads a head's rows by offset.
    """

    x: torch.Tensor  # (N, d): what the projections read (the layer's input after its norm)
    source: str | Msg  # what X is, for the projection formula
    weights: dict[str, torch.Tensor]
    heads: int
    kv_heads: int
    head_dim: int
    scale: float  # the model's factor on q·k
    causal: bool
    window: int | None = None  # sliding: query i sees keys i − window < j; None: global
    q_norm: NormSpec | None = None
    k_norm: NormSpec | None = None
    rotary: RotarySpec | None = None
    soft_cap: float | None = None  # scores become cap·tanh(s / cap)
    positional: str = "absolute"  # without rotary: absolute (added to the input) or none
    scale_name: str | None = None  # the config's name for `scale` where it is not 1/√d_h (attention_multiplier)
    fused: FusedRows | None = None  # where W_q, W_k, W_v were cut from, when the model stores them as one


def no_kv(config: object) -> int:
    """Each query head has its own key and value head (kv_heads 0 in the run's metadata)."""
    return 0


def same_heads(config: object) -> tuple[int, ...]:
    """Every layer has the model's `num_attention_heads` heads."""
    return ()


def no_rope(config: object) -> float:
    return 0.0


class OwnStep(Protocol):
    """A layer that writes with a cache of its own (DeepSeek's latent, Gated DeltaNet's state), not the keys and
    values a LayerSpec describes: it keeps what its steps read, one step at a time."""

    def step(self, trace: Trace, rows: torch.Tensor, first: int, labels: tuple[str, ...], step: int
             ) -> torch.Tensor | None:
        """The layer's new input rows (rows, d) at positions first…: its cache grows by them and is recorded as
        a stage at `step` (labels: "position:token" of every position so far); returns the rows' softmax
        weights (heads, rows, n), or None where the layer has none (it records its own per-step stages)."""

    def record(self, trace: Trace, run_: ModelRun, step: int, queries: int) -> float | None:
        """Every other stage of the layer at `step`, its last `queries` rows querying (run_: every position);
        returns the layer's scale on q·k (None: it has no scores)."""


@dataclass(frozen=True)
class OwnLayer:
    """Layers that record themselves: `holds(model, layer)` says which; `record(run, trace, layer)` records every
    stage of one and returns its scale on q·k (None: it has no scores); `stepper(loaded, layer)` keeps its cache
    while the model writes (an `OwnStep`)."""

    name: str  # what the layer keeps in place of keys and values
    holds: Callable[[Any, int], bool]
    record: Callable[[ModelRun, Trace, int], float | None]
    stepper: Callable[[LoadedModel, int], OwnStep]


@dataclass(frozen=True)
class AfterHeads:
    """Stages added after the shared tracer's for a layer's heads: `record(trace, spec, layer, run, step, queries)`,
    at a written step `step` with only the last `queries` rows querying (None, None: a forward pass).

    `w_o_reads_heads`: False where these stages change a head's output before W_O reads it (a gate), so the
    `moved` stage, ‖A·v·W_O‖, would not be what the head moves, and is not recorded."""

    name: str
    record: Callable[[Trace, LayerSpec, int, ModelRun, int | None, int | None], None]
    w_o_reads_heads: bool = True


def every_layer(model: Any, layer: int) -> bool:
    return True


class LatentFamily(NamedTuple):
    """How a family with a latent projection reads one layer (handed to the shared latent parts, which never import
    the family back)."""

    latent_sizes: Callable[..., Any]  # (attn, config, heads, prefix) -> Latent
    weights: Callable[..., dict[str, torch.Tensor]]  # (attn, kv_rank, heads, d_nope) -> the layer's weights
    turn_at: Callable[..., Any]  # (model, x, first, prefix) -> Turn at the rows' own positions
    record_layer: Callable[..., float]  # (run, trace, layer, step, queries) -> the layer's scale


@dataclass(frozen=True)
class ConfigCheck:
    """A config.json value the model cannot mean anything without: refused before loading, naming the key and the
    value (a rotary base of 0 or a negative epsilon would load, and turn every score into NaN).

    `keys`: where the value may be (the first present is read; a nested one is dotted, `rope_parameters.factor`);
    `holds`: whether a number is one the model can use; `means`: what it must be, marked with N_. A value that is
    absent or null is the model's default, and not checked.
    """

    keys: tuple[str, ...]
    holds: Callable[[float], bool]
    means: str


def positive(value: float) -> bool:
    return math.isfinite(value) and value > 0


def fraction(value: float) -> bool:
    return math.isfinite(value) and 0 < value <= 1


def whole(value: float) -> bool:
    return math.isfinite(value) and value >= 1 and value == int(value)


def probability(value: float) -> bool:
    return math.isfinite(value) and 0 <= value <= 1


def natural(value: float) -> bool:
    return math.isfinite(value) and value >= 0 and value == int(value)


@dataclass(frozen=True)
class KeyPattern:
    """Every top-level config.json key whose name says what it is (a dropout, a count, a width), whichever family
    names it: each is checked as a ConfigCheck checks its key, so a family's own sizes are covered without a line
    of its own. `except_keys` are named alike but mean something else (0 experts in a layer: none)."""

    pattern: str
    holds: Callable[[float], bool]
    means: str
    except_keys: tuple[str, ...] = ()

    def keys_in(self, config: Mapping[str, object]) -> tuple[str, ...]:
        return tuple(key for key in config if re.search(self.pattern, key) and key not in self.except_keys)


# Counts where 0 means "none of them" (dense layers before the experts, shared experts, extra prediction layers,
# layers with a window): a whole number, 0 or more.
NONE_IS_ZERO = ("first_k_dense_replace", "n_shared_experts", "num_nextn_predict_layers", "max_window_layers",
                "decoder_sparse_step", "num_experts", "n_routed_experts", "num_local_experts")
COUNT = r"^(num_|n_)|_(size|dim|heads|layers|embeddings|positions)$"


@dataclass(frozen=True)
class Divides:
    """Two config.json head counts where the first must divide the second (key/value heads into query heads)."""

    part: str
    whole: str


# What every family's config must hold where it gives the value (a family adds its own in `Family.checks`).
SHARED_CHECKS: tuple[ConfigCheck | KeyPattern | Divides, ...] = (
    ConfigCheck(("rope_theta", "rope_parameters.rope_theta", "rotary_emb_base"), positive, N_("a number above 0")),
    ConfigCheck(("rope_scaling.factor", "rope_parameters.factor"), positive, N_("a number above 0")),
    ConfigCheck(("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps"), positive, N_("a number above 0")),
    ConfigCheck(("partial_rotary_factor", "rotary_pct"), fraction, N_("a fraction above 0 and at most 1")),
    ConfigCheck(("num_attention_heads", "n_head"), whole, N_("a whole number, at least 1")),
    ConfigCheck(("num_key_value_heads",), whole, N_("a whole number, at least 1")),
    Divides("num_key_value_heads", "num_attention_heads"),
    ConfigCheck(("query_pre_attn_scalar",), positive, N_("a number above 0")),
    KeyPattern(r"dropout|pdrop|_prob$", probability, N_("a probability, from 0 to 1")),
    KeyPattern(COUNT, whole, N_("a whole number, at least 1"), except_keys=NONE_IS_ZERO),
    KeyPattern("^(" + "|".join(NONE_IS_ZERO) + ")$", natural, N_("a whole number, 0 or more")),
)


def no_own_attention(size: Callable[[str], int | None]) -> int | None:
    """A layer's attention is the usual q, k, v and o projections (counted from the sizes alone)."""
    return None


def no_experts(size: Callable[[str], int | None], layer: int) -> int | None:
    """Every layer's MLP is the dense one (counted from the sizes alone)."""
    return None


@dataclass(frozen=True)
class Family:
    """A family adapter: every fact attn-tui needs about one model family, and how to read layer `i` of a run into
    a LayerSpec.

    What the folder's check, the memory estimate, offloading and the `moved` stage read before or beside the
    tracer is declared here too, so a family is its one module: the config's `model_type`s it reads, where the base
    model keeps its layers (`blocks`) and each layer its output projection (`output`, W_O), the checkpoint's name
    for the matrix that makes the logits (`unembedding`), config.json's names for its sizes where they are not the
    usual ones (`sizes`), its MLP's matrices, a query projection that also holds a gate (`gated_query`), one
    layer's attention parameters where they are not q, k, v and o (`attention_parameters`, given a reader of
    config.json's sizes by name; None: the usual count), a layer's experts where it has them
    (`expert_parameters`), and the config values of its own it cannot mean anything
    without (`checks`, beside the SHARED_CHECKS every family's config passes). `kv_heads` and `rope_base` read the
    config for the run's metadata (0 = each head its own, no rotation). `own_layers` and `after_heads` switch on
    the tracer's named parts where a layer is more than keys and values over a softmax.
    """

    name: str
    causal: bool
    layer: Callable[[ModelRun, int], LayerSpec]
    model_types: tuple[str, ...] = ()  # config.json's model_type values it reads (its own name besides)
    blocks: str = "layers"
    output: str = "self_attn.o_proj"
    unembedding: str = "lm_head.weight"
    sizes: Mapping[str, str] = field(default_factory=dict, compare=False)  # part (width, heads …) → config's name
    mlp_matrices: int = 3  # 2: up and down; 3: gated (up, gate, down)
    gated_query: bool = False  # q_proj holds each head's query and then its output gate: twice the rows
    attention_parameters: Callable[[Callable[[str], int | None]], int | None] = field(default=no_own_attention)
    # layer i's MLP parameters where it is a mixture of experts (None: the dense MLP), from config.json's sizes
    expert_parameters: Callable[[Callable[[str], int | None], int], int | None] = field(default=no_experts)
    checks: tuple[ConfigCheck | KeyPattern | Divides, ...] = ()  # its own config values to refuse, beside SHARED_CHECKS
    kv_heads: Callable[[object], int] = field(default=no_kv)
    rope_base: Callable[[object], float] = field(default=no_rope)
    # each layer's own head count where the layers differ (Qwen3-Next's linear layers); (): all `heads`
    layer_heads: Callable[[object], tuple[int, ...]] = field(default=same_heads)
    # the tracer's capabilities beyond a LayerSpec that the family switches on (families/shared/parts.py): layers
    # that record themselves and keep their own cache, and stages after the heads of the others
    own_layers: OwnLayer | None = None
    after_heads: tuple[AfterHeads, ...] = ()

    def own_layer(self, model: Any, layer: int) -> OwnLayer | None:
        """The part that records layer `layer` itself; None where the layer is read as a LayerSpec."""
        own = self.own_layers
        return own if own is not None and own.holds(model, layer) else None

    def w_o_reads_heads(self) -> bool:
        """Whether W_O reads the heads' outputs as the tracer records them (no part changes them first)."""
        return all(part.w_o_reads_heads for part in self.after_heads)

    @property
    def reads(self) -> tuple[str, ...]:
        """The config.json model_types this family's adapter reads."""
        return self.model_types or (self.name,)
