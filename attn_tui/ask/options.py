"""Every setting of a computation, declared once: its type, range or choices, default, help, flag and pane row.

The command line's options, the model pane's rows and their parsing, the API's keyword
checks, the saved session's checks and the budget's limits are all read from here, at
the moment they are needed, so changing one range here changes it everywhere at once
(tests/ask/test_options.py does exactly that). Torch-free and argparse-free: what reads
a value from text raises `OptionError`, which each front end turns into its own kind of
refusal.

`SETTINGS` are the fields of `Settings` (one entry each, in that order); `MODEL_OPTIONS`
are the numbers and flags of a model run, read by the same code.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Literal

from attn_tui.i18n import N_, NP_, _

VARIANT_NAMES = ("dot", "scaled_dot", "general", "additive", "concat", "multihead", "rope", "gqa", "alibi", "sink",
                 "flash", "mla", "diff", "linear")
MASK_NAMES = ("none", "causal", "padding", "causal+padding", "sliding", "sliding+padding")
PROJECTION_NAMES = ("learned", "identity")  # from a sentence or X: seeded W_q, W_k, W_v, or Q = K = V = X
FILL_NAMES = ("-inf", "-1e9")
# What a 1 in a custom mask means: torch's SDPA (and the app) read 1 = may attend; some notes (seed 003) write
# 1 = padding, the key is blocked. The setting says which, so a mask typed the note's way is read the note's way.
MASK_MEANS_NAMES = ("attend", "block")
DEVICE_NAMES = ("auto", "cpu", "cuda")
DTYPE_NAMES = ("float32", "float64", "float16", "bfloat16")
RULE_NAMES = ("gated-delta", "plain")  # linear: how each token writes the state (Qwen3-Next's, or a plain sum)
# QK-norm: none; rms over each head's own dimensions (Qwen3, Gemma 3); rms-all over the whole projection (OLMo-2)
QK_NORM_NAMES = ("none", "rms", "rms-all")
PROBE_NAMES = ("induction",)  # built-in inputs a real model can be fed in place of --text (sources/probe.py)
WHOLE = re.compile(r"[+-]?[0-9]+")  # plain ASCII digits: no '1_0', no other scripts' digits

Row = Literal["select", "input", "checkbox", ""]


class OptionError(ValueError):
    """A value an option cannot take; the message says why (in the language on show)."""


@dataclass(frozen=True)
class Option:
    """One setting: what it holds, what it may be, what it is unless given, and how each front end offers it.

    `low`/`high` bound a number (inclusive; `above` makes `low` exclusive and the number finite);
    `refusal` is the command line's words for a float out of range, `pane_refusal` the model
    pane's (for an int the pane says "at least 1", "0 or more" or "at most N" itself).
    """

    name: str
    kind: type  # int, float, bool or str
    default: object
    help: str | None = None  # marked with N_: translated where it is shown
    choices: tuple[str, ...] | None = None
    low: float | None = None
    high: float | None = None
    above: bool = False
    optional: bool = False  # None is a value: the default size (dim)
    metavar: str | None = None
    label: str = ""  # the model pane's row label, context "setting" (NP_); "" for no row
    row: Row = ""
    always: bool = False  # applies to every variant on every input: never greyed out
    own: bool = False  # one variant's (or one mask's) knob: its row shows only where it applies
    for_models: bool = False  # a real model reads it too: its row stays when a model is chosen
    refusal: str = ""
    pane_refusal: str = ""

    @property
    def flag(self) -> str:
        return "--" + self.name.replace("_", "-")

    def read(self, text: str) -> object:
        """The value `text` stands for, checked against the kind, the range and the choices; OptionError if none."""
        if self.kind is int:
            if not WHOLE.fullmatch(text.strip()):
                raise OptionError(_("expected a whole number, got {text}").format(text=repr(text[:30])))
            value = int(text)
            assert self.low is not None and self.high is not None  # every whole number is bounded both ways
            low, high = int(self.low), int(self.high)
            if not low <= value <= high:
                raise OptionError(_("must be between {lo} and {hi}, got {text}").format(
                    lo=f"{low:,}", hi=f"{high:,}", text=text[:30]))
            return value
        if self.kind is float:
            try:
                number = float(text)
            except ValueError:
                raise OptionError(_("expected a number, got {text}").format(text=repr(text[:30]))) from None
            if not self.holds(number):
                raise OptionError(_(self.refusal).format(text=text[:30]))
            return number
        return text  # a choice is checked by each front end in its own words (argparse's, the API's)

    def holds(self, value: float) -> bool:
        """Whether a number lies in this option's range."""
        if self.above:
            return math.isfinite(value) and value > (self.low or 0) and (self.high is None or value <= self.high)
        return (self.low is None or value >= self.low) and (self.high is None or value <= self.high)


def _int(name: str, default: int | None, low: int, high: int, metavar: str, label: str, help: str | None = None,
         *, optional: bool = False, own: bool = False, pane_refusal: str = "") -> Option:
    return Option(name, int, default, help, low=low, high=high, metavar=metavar, label=label, row="input",
                  optional=optional, own=own, pane_refusal=pane_refusal)


def _choice(name: str, names: tuple[str, ...], label: str, help: str | None = None, *, always: bool = False,
            own: bool = False) -> Option:
    return Option(name, str, names[0], help, choices=names, label=label, row="select", always=always, own=own)


MAX_GENERATE = 4096  # tokens one generation writes at most (the budget usually refuses fewer)
MAX_HEADS = 64  # more heads than this are no longer something to look at one by one
SETTINGS: dict[str, Option] = {o.name: o for o in (
    Option("variant", str, "scaled_dot", None, choices=VARIANT_NAMES, label=NP_("setting", "variant"), row="select",
           always=True),
    _choice("mask", MASK_NAMES, NP_("setting", "mask"), always=True),
    _choice("mask_fill", FILL_NAMES, NP_("setting", "fill"), N_("value written into masked scores (default -inf)")),
    _choice("mask_means", MASK_MEANS_NAMES, NP_("setting", "1 means"),
            N_("what a 1 in the mask means: attend (1 = may attend, torch's SDPA; the default) or block (1 = padding, "
               "the key is blocked, as some notes write it)"), own=True),
    _int("pad_keys", 0, 0, 10**9, "N", NP_("setting", "pad keys"), N_("treat the last N keys as padding")),
    _int("heads", 2, 1, MAX_HEADS, "N", NP_("setting", "heads"),
         N_("heads for multihead, gqa, alibi, sink and diff (must divide the width)")),
    _int("dim", None, 1, 4096, "D", NP_("setting", "dim"),  # widths beyond are no longer to look at, only to wait for
         N_("model dimension for sentences; hidden size for additive/concat"), optional=True),
    Option("positional", bool, False, N_("add sinusoidal positions"), label=NP_("setting", "pos enc"),
           row="checkbox"),
    _int("seed", 0, -(2**62), 2**62, "S", NP_("setting", "seed"),
         pane_refusal=N_("seed must be between -2^62 and 2^62")),
    Option("device", str, "auto", None, choices=DEVICE_NAMES, label=NP_("setting", "device"), row="select",
           always=True, for_models=True),
    _choice("dtype", DTYPE_NAMES, NP_("setting", "dtype"), always=True),
    Option("temperature", float, 1.0, N_("divides the scores (default 1)"), low=0, above=True, metavar="TEMP",
           label=NP_("setting", "temp"), row="input", always=True,
           refusal=N_("must be a positive finite number, got {text}"),
           pane_refusal=N_("temperature must be a positive number")),
    _choice("projection", PROJECTION_NAMES, NP_("setting", "proj"),
            N_("from a sentence or X: learned (seeded) W_q, W_k, W_v, or identity (Q = K = V = X)")),
    Option("rope_base", float, 10000.0, N_("rope: θ_i = BASE^(−2i/d) (default 10000)"), low=1, above=True,
           metavar="BASE", label=NP_("setting", "θ base"), row="input", own=True,
           refusal=N_("must be a finite number above 1, got {text}"),
           pane_refusal=N_("{setting} must be a finite number above 1")),
    _int("kv_heads", 1, 1, MAX_HEADS, "K", NP_("setting", "kv heads"),
         N_("gqa: key/value heads shared by the query heads (must divide --heads; 1 = multi-query)"), own=True),
    _int("window", 3, 1, 100_000, "W", NP_("setting", "window"),
         N_("sliding masks: query i sees keys i−W < j ≤ i (default 3)"), own=True),
    _int("tile", 4, 1, 100_000, "T", NP_("setting", "tile"),
         N_("flash: keys per tile of the online softmax (default 4)"), own=True),
    Option("absorbed", bool, False, N_("mla: fold W_uk into the query, so the scores meet the cached latent itself"),
           label=NP_("setting", "absorbed"), row="checkbox", own=True),
    _int("depth", 0, 0, 1000, "L", NP_("setting", "λ depth"),
         N_("diff: the layer's index from 0, which sets λ_init = 0.8 − 0.6·exp(−0.3·L) (default 0)"), own=True),
    _choice("rule", RULE_NAMES, NP_("setting", "rule"),
            N_("linear: how each token writes the state: gated-delta (decay α_t, then a delta-rule write of "
               "strength β_t, as Qwen3-Next; the default) or plain (S_t = S_(t−1) + k_tᵀv_t)"), own=True),
    # What any score-based variant may add: a soft cap, a QK-norm, the output gate.
    Option("softcap", float, None, N_("a logit soft cap C·tanh(S'/C) before the mask, as Gemma 2 (default: none)"),
           low=0, above=True, high=1e6, optional=True, metavar="C", label=NP_("setting", "soft cap"), row="input",
           own=True, refusal=N_("must be a number above 0 and at most 1000000, got {text}"),
           pane_refusal=N_("{setting} must be a positive number, or empty for none")),
    Option("qk_norm", str, "none", N_("RMSNorm on q and k with a seeded weight: rms over each head's dimensions "
                                      "(Qwen3, Gemma 3), rms-all over the whole projection (OLMo-2)"),
           choices=QK_NORM_NAMES, label=NP_("setting", "qk norm"), row="select", own=True),
    Option("gate", bool, False, N_("the output gate σ(X·W_g) on each head's weighted sum, as Qwen3-Next's gated "
                                   "attention"), label=NP_("setting", "gate"), row="checkbox", own=True),
)}
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
