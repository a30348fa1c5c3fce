"""What a trace is a trace of, as typed frozen data: a variant run, a transformer run, a decoder run.

Every view reads these fields instead of guessing from a name; each kind answers the
same few questions (its title, how many layers and heads, how its scores were masked),
so the views need not know which kind they hold.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Union

from attn_tui.ask.settings import Settings
from attn_tui.i18n import Msg


class _Answers:
    """What every kind of run answers the same way unless it says otherwise, so a view asks instead of testing types.

    (Its plain attributes must be defaults its kinds' fields share: a dataclass reads a field's default from them.)

    `decoding` and `program` hand over the run itself where it is a decode or recorded code (None otherwise);
    `settings_of_variants` the settings where attn-tui's own variants ran.
    """

    threads = 0  # threads a recorded script left running when its process ended
    fed: tuple[str, ...] = ()  # a decoder's input at each step
    kv_map: tuple[int, ...] = ()  # grouped-query runs: the key/value head of each query head
    layer_heads: tuple[int, ...] = ()  # each layer's own head count where layers differ (Qwen3-Next); (): `heads`

    if TYPE_CHECKING:  # each kind below names itself
        @property
        def title(self) -> str: ...

    @property
    def short_title(self) -> str:
        """The run's name for a one-line label (a decoder's model, without its output)."""
        return self.title

    @property
    def attention_kind(self) -> str:
        """A trained decoder's attention (additive, general, …); empty for any other run."""
        return ""

    @property
    def decoding(self) -> DecoderRun | None:
        return None

    @property
    def program(self) -> RecordedRun | None:
        return None

    @property
    def settings_of_variants(self) -> Settings | None:
        return None

    def missed(self, step: int, written: str) -> bool:
        """Step `step` wrote another character than the target's (only a decode against a target can miss)."""
        return False

    def step_name(self, step: int) -> Msg:
        """`step 2`, or what a step is in this kind of run (a decoder step, a tile of keys), counted from 0."""
        return Msg("step {step}", step=step)


@dataclass(frozen=True, kw_only=True)
class VariantRun(_Answers):
    """One of attn-tui's own attention variants on a sentence or typed matrices."""

    settings: Settings
    vocab: tuple[str, ...] = ()  # a sentence's distinct tokens, in table order
    heads: int = 1
    special_tokens: tuple[int, ...] = ()  # none: every token is the user's own
    kv_heads: int = 0  # gqa: key/value heads (0: each head has its own)
    kv_map: tuple[int, ...] = ()  # gqa: the key/value head of each query head

    @property
    def variant(self) -> str:
        return self.settings.variant

    @property
    def title(self) -> str:
        return self.settings.variant

    @property
    def layers(self) -> int:
        return 1

    @property
    def explains(self) -> tuple[str, ...]:
        """Keys of the explanations that apply, most specific first."""
        return (self.settings.variant,)

    @property
    def settings_of_variants(self) -> Settings:
        return self.settings

    def step_name(self, step: int) -> Msg:
        return Msg("tile {t}", t=step)  # flash: a step is a tile of keys

    def header(self) -> dict[str, object]:
        kind: dict[str, object] = {"kind": "variant", "variant": self.variant, "settings": self.settings.as_dict(),
                                   "vocab": list(self.vocab) or None, "heads": self.heads}
        if self.kv_map:  # grouped-query: the key/value head each query head reads
            kind |= {"kv_heads": self.kv_heads, "kv_map": list(self.kv_map)}
        return kind


@dataclass(frozen=True, kw_only=True)
class TransformerRun(_Answers):
    """A real transformer's forward pass: every layer and head of it, traced on demand."""

    model: str
    family: str  # bert | gpt2
    layers: int
    heads: int
    scale: float  # the model's own factor on q·k
    causal: bool
    special_tokens: tuple[int, ...] = ()  # positions of [CLS], [SEP], [PAD], …
    kv_heads: int = 0  # grouped-query models: key/value heads (0: each head has its own)
    kv_map: tuple[int, ...] = ()  # grouped-query models: the key/value head of each query head
    rope_base: float = 0.0  # rotary models: θ_i = base^(−2i/d) (0: no rotation)
    offloaded: tuple[str, ...] = ()  # where each layer's weights were offloaded: "" (not), "cpu" or "disk"; ()
    token_ids: tuple[int, ...] = ()  # the ids fed, one per position (the head roles compare ids, not strings)
    probe: str = ""  # the built-in probe fed instead of a text ("" for a text)
    scored_from: int = 0  # the first query row the head roles score: the induction probe's repeated half
    # each layer's own head count where layers differ (a Qwen3-Next linear layer has its value heads, more than
    # `heads`); (): every layer has `heads`
    layer_heads: tuple[int, ...] = ()

    @property
    def title(self) -> str:
        return self.model

    @property
    def explains(self) -> tuple[str, ...]:
        # the family first: a family that computes a stage its own way (diffllama) explains it so
        return (self.family, "llama", "rope", "gqa") if self.rope_base else (self.family, "scaled_dot")

    def header(self) -> dict[str, object]:
        return {"kind": "transformer", "model": self.model, "settings": asdict(self)}


@dataclass(frozen=True, kw_only=True)
class DecoderRun(_Answers):
    """A trained encoder-decoder decoding one input, one output character per step.

    The GRU models have one attention (one layer, one head); the transformer has
    `layers` encoder and decoder layers of `heads` heads each, all of them traced, so the
    app's layer and head keys move through them without recomputing.
    """

    model: str
    attention: str  # additive | general | scaled_dot
    input: str
    output: str
    steps: int
    target: str | None = None
    teacher_forcing: bool = False
    special_tokens: tuple[int, ...] = ()
    fed: tuple[str, ...] = ()  # the character fed into each step: <s>, then the target's (forced) or its own
    layers: int = 1
    heads: int = 1
    arch: str = "gru"  # gru | transformer

    def missed(self, step: int, written: str) -> bool:
        """Step `step` wrote `written` where the target has another character (or none)."""
        if self.target is None:
            return False
        wanted = self.target[step] if step < len(self.target) else "</s>"
        return written != wanted

    @property
    def title(self) -> str:
        if self.target is None:
            return f"{self.model} ({self.attention}) → {self.output}"
        if self.output == self.target:
            return str(Msg("{model} ({attention}) → {output}, target {target} matched", model=self.model,
                           attention=self.attention, output=self.output, target=self.target))
        return str(Msg("{model} ({attention}) → {output}, target {target} missed", model=self.model,
                       attention=self.attention, output=self.output, target=self.target))

    @property
    def explains(self) -> tuple[str, ...]:
        if self.arch == "transformer":
            return ("transformer-dates",)
        return ("decoder", self.attention)

    @property
    def short_title(self) -> str:
        return self.model

    @property
    def attention_kind(self) -> str:
        return self.attention

    @property
    def decoding(self) -> DecoderRun:
        return self

    def step_name(self, step: int) -> Msg:
        return Msg("decoder step {t}", t=step)

    def header(self) -> dict[str, object]:
        return {"kind": "decoder", "model": self.model, "output": self.output, "settings": asdict(self)}


@dataclass(frozen=True, kw_only=True)
class RecordedRun(_Answers):
    """The user's own attention code, recorded while it ran (a script, or a block under `attn_tui.record()`).

    `modules` names each attention module (or function) that ran, in order; `calls[m]`
    says how many times module m ran and `shown[m]` how many of those calls are in the
    trace (the last ones). Batch items and calls are the trace's steps; heads its heads.
    """

    script: str  # the file that ran, or "" for code recorded in a notebook or a session
    modules: tuple[str, ...]
    heads: int = 1
    calls: tuple[int, ...] = ()
    shown: tuple[int, ...] = ()
    kinds: tuple[str, ...] = ()  # what each module was recognised as: scaled_dot, additive, …, or recorded
    steps: tuple[str, ...] = ()  # for each step of the first module: "call c, batch item b"
    special_tokens: tuple[int, ...] = ()
    threads: int = 0  # threads the script left running when its process ended (attn-tui did not wait for them)
    stopped: str = ""  # how the file stopped where it failed ("": it ended well); the trace is what came before

    @property
    def title(self) -> str:
        where = self.script or "recorded"
        return f"{where}: {', '.join(self.modules)}"

    @property
    def layers(self) -> int:
        return 1

    @property
    def explains(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(k for k in (*self.kinds, "recorded") if k))

    @property
    def program(self) -> RecordedRun:
        return self

    def header(self) -> dict[str, object]:
        settings = {k: v for k, v in asdict(self).items() if k != "threads"}  # how the run ended is no setting
        return {"kind": "recorded", "script": self.script, "modules": list(self.modules), "settings": settings}


@dataclass(frozen=True, kw_only=True)
class GenerationRun(TransformerRun):
    """A causal model writing token by token: the prompt, the ids written so far and how each was chosen.

    Step 0 is the prefill (the prompt's rows over the prompt), step t ≥ 1 one query row, the token fed there,
    over every key its cache holds; `generated_ids[t]` is the token step t wrote."""

    prompt_tokens: tuple[str, ...] = ()
    prompt_ids: tuple[int, ...] = ()
    generated_ids: tuple[int, ...] = ()
    generated_tokens: tuple[str, ...] = ()  # each written token as shown (a leading space as ▁)
    output: str = ""  # the written tokens decoded to text
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    seed: int = 0
    stopped: bool = False  # it met the model's end-of-text token before writing all it was asked for
    cache: str = ""  # StreamingLLM's window:W,sinks:S, or "" (every token stays in the cache)

    def header(self) -> dict[str, object]:
        return super().header() | {"kind": "generation", "prompt_tokens": list(self.prompt_tokens),
                                   "prompt_ids": list(self.prompt_ids), "generated_ids": list(self.generated_ids),
                                   "generated_tokens": list(self.generated_tokens), "output": self.output}


RunMeta = Union[VariantRun, TransformerRun, DecoderRun, RecordedRun]
