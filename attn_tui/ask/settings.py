"""What to compute: the settings and the three kinds of input, as plain frozen data.

Nothing here imports torch, so the app can hold and edit settings before torch loads.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import PurePath
from typing import Any, Protocol, TypeVar, Union

# The choices, re-exported where the code has always found them; they are declared in ask/options.py.
from attn_tui.ask.options import DEFAULT_DIM as DEFAULT_DIM
from attn_tui.ask.options import DEVICE_NAMES as DEVICE_NAMES
from attn_tui.ask.options import DTYPE_NAMES as DTYPE_NAMES
from attn_tui.ask.options import FILL_NAMES as FILL_NAMES
from attn_tui.ask.options import MASK_MEANS_NAMES as MASK_MEANS_NAMES
from attn_tui.ask.options import MASK_NAMES as MASK_NAMES
from attn_tui.ask.options import PROJECTION_NAMES as PROJECTION_NAMES
from attn_tui.ask.options import SETTINGS, SHARED, OwnValues, default, default_model
from attn_tui.ask.options import VARIANT_NAMES as VARIANT_NAMES

SLIDING_MASKS = ("sliding", "sliding+padding")  # the kinds --window applies to
T_co = TypeVar("T_co", covariant=True)
T = TypeVar("T")


@dataclass(frozen=True)
class Settings:
    """Every knob of a computation; the same object drives the CLI and the app. Each setting's default, range and
    help are declared once: the shared ones in `ask/options.py`, a variant's own in its package (held in `own`).
    Read any of them by name with `value`, change them with `replace`."""

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
    bias: bool = default("bias")  # learned projections add a seeded bias, as nn.Linear's
    window: int = default("window")  # sliding masks: query i sees keys i − window < j ≤ i
    softcap: float | None = default("softcap")  # C·tanh(S'/C) before the mask; None: no cap
    qk_norm: str = default("qk_norm")  # none | rms (per head) | rms-all (over the whole projection)
    gate: bool = default("gate")  # σ(X·W_g) on each head's weighted sum
    own: OwnValues = OwnValues()  # the settings each variant declares for itself (flash's tile, gqa's kv_heads …)

    @classmethod
    def of(cls, **values: Any) -> Settings:
        """Settings from values by name, shared and variants' own alike (a sample, a session, a test)."""
        unknown = set(values) - set(SETTINGS)
        if unknown:
            raise TypeError(f"unknown settings: {', '.join(sorted(unknown))}")
        return cls(**{name: value for name, value in values.items() if name in SHARED},
                   own=OwnValues.of({name: value for name, value in values.items() if name not in SHARED}))

    def value(self, name: str) -> Any:  # the setting's own type, which its Option declares
        """Any setting's value by name."""
        return getattr(self, name) if name in SHARED else self.own.get(name)

    def replace(self, **changes: Any) -> Settings:
        """These settings with some changed, shared and variants' own alike."""
        return Settings.of(**(self.as_dict() | changes))

    def as_dict(self) -> dict[str, Any]:
        """Every setting by name, in the schema's order (the session file, the export)."""
        return {name: self.value(name) for name in SETTINGS}


class InputReader(Protocol[T_co]):
    """Reads any of the three inputs (`source.read(reader)`): one method a kind, so no reader tests types."""

    def sentence(self, source: SentenceInput) -> T_co: ...

    def matrices(self, source: MatrixInput) -> T_co: ...

    def x(self, source: XInput) -> T_co: ...


@dataclass(frozen=True)
class SentenceInput:
    """A sentence, split on whitespace; Q, K, V come from a seeded embedding."""

    text: str

    kind = "sentence"  # sentence | matrices | x: what each input says it is (and the session file calls it)
    typed = False  # Q, K, V typed by hand (nothing projects them, no positions are added)
    embedded = True  # token vectors from attn-tui's seeded embedding table (their width is the dim setting)

    def read(self, reader: InputReader[T]) -> T:
        return reader.sentence(self)

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

    kind = "matrices"
    typed = True
    embedded = False

    def read(self, reader: InputReader[T]) -> T:
        return reader.matrices(self)

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

    kind = "x"
    typed = False
    embedded = False

    def read(self, reader: InputReader[T]) -> T:
        return reader.x(self)

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
class ModelAsk:
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
    generate: int = 0  # a causal model writes this many tokens after the text (0: one forward pass, no writing)
    do_sample: bool = False  # draw each token (else greedy), shaped by the four below
    temperature: float = 1.0
    top_k: int = 0  # 0: every token
    top_p: float = 1.0
    seed: int = 0
    cache: str = ""  # "" keeps every token; "window:W,sinks:S" StreamingLLM's (ask.model_request.cache_window)
    probe: str = ""  # "" reads `text`; "induction": a seeded random token sequence repeated twice, fed as ids
    probe_length: int = default_model("probe_length")  # the probe's random sequence, before it is repeated
    probe_seed: int = default_model("probe_seed")

    kind = "model"  # what every ask says it is: variants | model | recorded
    from_panes = True  # the panes show it and an edit asks for it again (the user's code: they cannot)
    runs_code = False  # computing it runs a script (only a RecordAsk that holds no trace yet does)

    def on_device(self, device: str) -> ModelAsk:
        """The same ask on another device (the door's CPU fallback)."""
        return replace(self, device=device)

    def changed(self, change: dict[str, object]) -> ModelAsk:
        """The same ask with some of its fields (a variants ask: its settings) changed, as compare mode's B."""
        return replace(self, **change)  # type: ignore[arg-type]

    @property
    def model(self) -> ModelAsk | None:
        """This ask where it is a model's (None for any other kind), so a view reads a model's fields untested."""
        return self

    @property
    def probed(self) -> tuple[str, int, int] | None:
        """(probe, length, seed) where the model is fed a built-in probe instead of the text; None otherwise."""
        return (self.probe, self.probe_length, self.probe_seed) if self.probe else None

    @property
    def request(self) -> VariantAsk | None:
        """This ask where it is the variants' (None for any other kind)."""
        return None


@dataclass(frozen=True)
class VariantAsk:
    """Settings plus input plus an optional custom 0/1 mask: everything `compute` needs."""

    source: SentenceInput | MatrixInput | XInput
    settings: Settings = field(default_factory=Settings)
    custom_mask: list[list[float]] | None = None
    mask_by_hand: bool = False  # the custom mask was made cell by cell with `x`, not given by a file or sample

    kind = "variants"
    from_panes = True
    runs_code = False

    @property
    def device(self) -> str:
        return self.settings.device

    def on_device(self, device: str) -> VariantAsk:
        return replace(self, settings=replace(self.settings, device=device))

    def changed(self, change: dict[str, object]) -> VariantAsk:
        return replace(self, settings=self.settings.replace(**change))

    @property
    def model(self) -> ModelAsk | None:
        return None

    @property
    def request(self) -> VariantAsk | None:
        return self


class Held(Protocol):
    """Attention code recorded already (a block under `attn_tui.record()`, a script's finished run): its trace.

    The trace is a `trace.stage.Trace`, a layer above the ask (a trace records the ask's settings), so the ask
    holds it without naming its type, as an `object`; the recorder source checks it where it hands it on.
    """

    @property
    def recorded(self) -> object: ...


@dataclass(frozen=True, eq=False)
class _Kept:
    """A finished trace kept as it is: asked for again, it is shown again, never re-run."""

    recorded: object  # a trace.stage.Trace


@dataclass(frozen=True)
class RecordAsk:
    """The user's own attention code: a script to run under the recorder (`attn-tui trace`), or a block
    recorded already (`held`, by reference: `attn_tui.record()`, or a script's run the app shows).

    The script's run is bounded by `timeout` seconds (0: none) and `max_calls` kept calls of each
    module; its stdout goes to stderr when `quiet_stdout` (a table or JSON owns stdout); `debug` adds
    the traceback of a failure of the recorder itself.
    """

    script: str = ""  # the file to run ("" for a sample by name, or a block recorded in a notebook or session)
    args: tuple[str, ...] = ()
    sample: str | None = None  # a sample script by name, in place of `script`
    max_calls: int = 64
    timeout: int = 0
    quiet_stdout: bool = False
    debug: bool = False
    held: Held | None = None  # recorded already: the trace is read from it, nothing runs

    kind = "recorded"
    from_panes = False  # the panes hold attn-tui's settings, not the user's code: an edit sets it aside
    device = "auto"  # the code chooses its own device: there is nothing to fall back from

    @property
    def runs_code(self) -> bool:
        return self.held is None

    @property
    def file_name(self) -> str:
        """The file's name as the user knows it (a sample's file), "" for a block recorded in a notebook or session."""
        return f"{self.sample}.py" if self.sample is not None else PurePath(self.script).name

    def on_device(self, device: str) -> RecordAsk:
        return self

    def changed(self, change: dict[str, object]) -> RecordAsk:
        return self  # the user's code has no settings of attn-tui's to change

    @property
    def model(self) -> ModelAsk | None:
        return None

    @property
    def request(self) -> VariantAsk | None:
        return None

    def keeping(self, trace: object) -> RecordAsk:
        """This ask with its trace recorded already: the app shows it (and undo brings it back) without running
        the code again."""
        return replace(self, held=_Kept(trace))


Ask = Union[VariantAsk, ModelAsk, RecordAsk]  # what any front end asks the one door for: a variant on an input, a
# model, or the user's own code
