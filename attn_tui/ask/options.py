"""Every setting of a computation, declared once: its type, range or choices, default, help, flag and pane row.

The command line's options, the model pane's rows and their parsing, the API's keyword
checks, the saved session's checks and the budget's limits are all read from here, at
the moment they are needed, so changing one range here changes it everywhere at once
(tests/ask/test_options.py does exactly that). Torch-free and argparse-free: what reads
a value from text raises `OptionError`, which each front end turns into its own kind of
refusal.

`SETTINGS` are the shared settings (the fields of `Settings`, in that order) and the ones each variant declares
in its package (`Variant.own`, held in `Settings.own`); `MODEL_OPTIONS` are the numbers and flags of a model run,
read by the same code. The `Option` type is `ask/option.py`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from attn_tui.ask.option import MAX_HEADS, choice, whole
from attn_tui.ask.option import Option as Option
from attn_tui.ask.option import OptionError as OptionError
from attn_tui.ask.variants import VARIANTS
from attn_tui.i18n import N_, NP_, _

VARIANT_NAMES = tuple(VARIANTS)  # in their declared order
MASK_NAMES = ("none", "causal", "padding", "causal+padding", "sliding", "sliding+padding")
PROJECTION_NAMES = ("learned", "identity")  # from a sentence or X: seeded W_q, W_k, W_v, or Q = K = V = X
FILL_NAMES = ("-inf", "-1e9")
# What a 1 in a custom mask means: torch's SDPA (and the app) read 1 = may attend; some notes (seed 003) write
# 1 = padding, the key is blocked. The setting says which, so a mask typed the note's way is read the note's way.
MASK_MEANS_NAMES = ("attend", "block")
DEVICE_NAMES = ("auto", "cpu", "cuda")
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16")
# QK-norm: none; rms over each head's own dimensions (Qwen3, Gemma 3); rms-all over the whole projection (OLMo-2)
QK_NORM_NAMES = ("none", "rms", "rms-all")
PROBE_NAMES = ("induction",)  # built-in inputs a real model can be fed in place of --text (sources/probe.py)
MAX_GENERATE = 4096  # tokens one generation writes at most (the budget usually refuses fewer)
_SHARED = (
    Option("variant", str, "scaled_dot", N_("the attention to compute (default scaled_dot; docs/variants.md says what "
                                            "each one is)"),
           choices=VARIANT_NAMES, label=NP_("setting", "variant"), row="select", always=True),
    choice("mask", MASK_NAMES, NP_("setting", "mask"), N_("which keys each query may see (default none)"), always=True),
    choice("mask_fill", FILL_NAMES, NP_("setting", "fill"), N_("value written into masked scores (default -inf)")),
    choice("mask_means", MASK_MEANS_NAMES, NP_("setting", "1 means"),
            N_("what a 1 in the mask means: attend (1 = may attend, torch's SDPA; the default) or block (1 = padding, "
               "the key is blocked, as some notes write it)"), situational=True),
    whole("pad_keys", 0, 0, 10**9, "N", NP_("setting", "pad keys"), N_("treat the last N keys as padding")),
    whole("heads", 2, 1, MAX_HEADS, "N", NP_("setting", "heads"),
         N_("heads for {with_heads} (must divide the width)")),
    whole("dim", None, 1, 4096, "D", NP_("setting", "dim"),  # widths beyond are no longer to look at, only to wait for
         N_("model dimension for sentences; hidden size for {with_hidden}"), optional=True),
    Option("positional", bool, False, N_("add sinusoidal positions"), label=NP_("setting", "pos enc"),
           row="checkbox", caption=N_("sinusoidal")),
    whole("seed", 0, -(2**62), 2**62, "S", NP_("setting", "seed"),
         N_("seeds the learned W_q, W_k, W_v (and a writing model's draws): the same seed, the same numbers "
            "(default 0)"), pane_refusal=N_("seed must be between -2^62 and 2^62")),
    Option("device", str, "auto", N_("where torch computes: auto takes CUDA when there is one (default auto)"),
           choices=DEVICE_NAMES, label=NP_("setting", "device"), row="select", always=True, for_models=True),
    choice("dtype", DTYPE_NAMES, NP_("setting", "dtype"), N_("the number type every stage is computed in (default "
                                                             "float32)"), always=True),
    Option("temperature", float, 1.0, N_("divides the scores (default 1)"), low=0, above=True, metavar="TEMP",
           label=NP_("setting", "temp"), row="input", always=True,
           refusal=N_("must be a positive finite number, got {text}"),
           pane_refusal=N_("temperature must be a positive number")),
    choice("projection", PROJECTION_NAMES, NP_("setting", "proj"),
            N_("from a sentence or X: learned (seeded) W_q, W_k, W_v, or identity (Q = K = V = X)")),
    Option("bias", bool, False, N_("learned projections add a seeded bias, X·Wᵀ + b, as nn.Linear does by default "
                                   "(the study notes' layers have one)"), label=NP_("setting", "bias"),
           row="checkbox", caption=N_("+ b")),
    whole("window", 3, 1, 100_000, "W", NP_("setting", "window"),
         N_("sliding masks: query i sees keys i−W < j ≤ i (default 3)"), situational=True),
    # What any score-based variant may add: a soft cap, a QK-norm, the output gate.
    Option("softcap", float, None, N_("a logit soft cap C·tanh(S'/C) before the mask, as Gemma 2 (default: none)"),
           low=0, above=True, high=1e6, optional=True, metavar="C", label=NP_("setting", "soft cap"), row="input",
           situational=True, refusal=N_("must be a number above 0 and at most 1000000, got {text}"),
           pane_refusal=N_("{setting} must be a positive number, or empty for none")),
    Option("qk_norm", str, "none", N_("RMSNorm on q and k with a seeded weight: rms over each head's dimensions "
                                      "(Qwen3, Gemma 3), rms-all over the whole projection (OLMo-2)"),
           choices=QK_NORM_NAMES, label=NP_("setting", "qk norm"), row="select", situational=True),
    Option("gate", bool, False, N_("the output gate σ(X·W_g) on each head's weighted sum, as Qwen3-Next's gated "
                                   "attention"), label=NP_("setting", "gate"), row="checkbox", situational=True,
           caption=N_("σ(X·W_g)")),
)
SHARED: dict[str, Option] = {o.name: o for o in _SHARED}
# Every setting: the shared ones, with each variant's own after `projection`, in the variants' order.
_SPLIT = list(SHARED).index("projection") + 1
# A variant's own setting applies only to the variants that read it: its row shows only there.
SETTINGS: dict[str, Option] = {o.name: o for o in (
    *_SHARED[:_SPLIT], *(replace(option, situational=True) for variant in VARIANTS.values() for option in variant.own),
    *_SHARED[_SPLIT:])}
if len(SETTINGS) != len(_SHARED) + sum(len(variant.own) for variant in VARIANTS.values()):
    raise TypeError("two settings share a name: a variant's own setting must have a name of its own")
VARIANT_OWN = tuple(option.name for variant in VARIANTS.values() for option in variant.own)
DEFAULT_DIM = 8  # the width of a sentence's embedding when dim is None (the pane's placeholder)
# The model run's own numbers and flag (its name, text and target are text, checked where they are read).
MODEL_OPTIONS: dict[str, Option] = {o.name: o for o in (
    Option("layer", int, 0, N_("a transformer's layer, counted from 0 (default 0)"), low=0, high=10**9, metavar="L"),
    Option("head", int, 0, N_("multihead or a transformer: the head, counted from 0 (default 0)"), low=0, high=10**9,
           metavar="H"),
    Option("pad_to", int, None, N_("a transformer: pad the tokenised text to N tokens"), low=1, high=100_000,
           metavar="N", optional=True),
    Option("teacher_forcing", bool, False,
           N_("a date model: feed the target's characters instead of the model's own")),
    # A causal model writing: how many tokens, greedy or drawn, and how each draw is shaped (sources/generate.py).
    Option("generate", int, 0, N_("a causal model: write N tokens after the text, one step each (default 0: none)"),
           low=0, high=MAX_GENERATE, metavar="N"),
    Option("do_sample", bool, False, N_("--generate: draw each token from the probabilities (default: greedy)")),
    Option("top_k", int, 0, N_("--generate with --do-sample: keep the K likeliest tokens (default 0: all)"), low=0,
           high=1_000_000, metavar="K"),
    Option("top_p", float, 1.0, N_("--generate with --do-sample: keep the likeliest tokens whose probabilities sum "
                                   "to P (default 1: all)"), low=0, above=True, high=1.0, metavar="P",
           refusal=N_("must be a number above 0 and at most 1, got {text}")),
    # A built-in probe fed as token ids in place of --text (sources/probe.py draws them with the model's tokenizer).
    Option("probe", str, "", N_("a real model: feed a built-in probe instead of --text; induction: a seeded random "
                                "token sequence repeated twice (Olsson et al. 2022)"), choices=PROBE_NAMES,
           metavar="NAME"),
    Option("probe_length", int, 32, N_("--probe: tokens in the random sequence, which is then repeated (default "
                                       "32)"), low=1, high=4096, metavar="L"),
    Option("probe_seed", int, 0, N_("--probe: the seed the sequence is drawn with (default 0)"), low=0,
           high=2**62, metavar="S"),
    Option("cache", str, "", N_("--generate: StreamingLLM's cache, window:W,sinks:S keeps the first S tokens and the "
                                "last W, rotary positions re-applied in the cache (default: every token)"),
           metavar="window:W,sinks:S"),
)}


@dataclass(frozen=True)
class OwnValues:
    """The values of the settings variants declare for themselves (`VARIANT_OWN`), held in `Settings.own`.

    Only the values that differ from their defaults are kept, in name order, so two settings that say the same
    thing compare (and hash) equal whichever way they were made.
    """

    changed: tuple[tuple[str, Any], ...] = ()

    @classmethod
    def of(cls, values: dict[str, Any]) -> OwnValues:
        """Kept: each value that is not its default, in the default's own type (so `True` for a number, or `4.0`
        for a whole one, stays to be refused by the checks)."""
        return cls(tuple(sorted((name, value) for name, value in values.items()
                                if type(value) is not type(default(name)) or value != default(name))))

    def get(self, name: str) -> Any:
        return next((value for key, value in self.changed if key == name), SETTINGS[name].default)


def help_text(option: Option) -> str:
    """An option's help in the language on show, with the variants it concerns named from the registry."""
    return "" if option.help is None else _(option.help).format(
        with_heads=", ".join(name for name, variant in VARIANTS.items() if variant.has_heads),
        with_hidden=", ".join(name for name, variant in VARIANTS.items() if variant.uses_hidden))


def setting(name: str) -> Option:
    """The declaration of one setting (read at call time, so a changed schema is seen at once)."""
    return SETTINGS[name]


def default(name: str) -> Any:  # the field's own type, which the dataclass annotates
    return SETTINGS[name].default


def default_model(name: str) -> Any:
    """A model run's option's default (`MODEL_OPTIONS`), as `default` is a setting's."""
    return MODEL_OPTIONS[name].default


def limit(name: str) -> int:
    """The largest value a whole-number setting takes (the budget's bound on heads, widths)."""
    high = SETTINGS[name].high
    assert high is not None
    return int(high)


def choices() -> dict[str, tuple[str, ...]]:
    """Every setting that is a choice, with its names: the app's menus, the session's checks."""
    return {o.name: o.choices for o in SETTINGS.values() if o.choices is not None}
