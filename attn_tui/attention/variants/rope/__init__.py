"""Rotary position embedding (RoPE): q and k turned by their positions, then scaled dot.

The declaration: everything the front ends read before torch loads. The math is `compute.py`."""

from __future__ import annotations

from attn_tui.ask.option import Option
from attn_tui.ask.variant import Variant, score_tail
from attn_tui.i18n import N_, NP_

ROPE_BASE = Option("rope_base", float, 10000.0, N_("rope: θ_i = BASE^(−2i/d) (default 10000)"), low=1, above=True,
                   metavar="BASE", label=NP_("setting", "θ base"), row="input",
                   refusal=N_("must be a finite number above 1, got {text}"),
                   pane_refusal=N_("{setting} must be a finite number above 1"))


VARIANT = Variant(
    name="rope", title="Rotary positions (RoPE)", order=70,
    stages=("query", "key", "value", "query_rot", "key_rot", "scores", "scaled", "masked", "weights", "output"),
    footprint=lambda z: score_tail(z, 4) | {"rotated q and k": (z.queries + z.keys) * z.d_q}, learned=False,
    own=(ROPE_BASE,),
    explains={
        "scores": N_(
        "Every rotated query is compared with every rotated key by a dot product. Nothing was added to the "
        "tokens: position enters only through the rotation, as in Llama, Qwen and Mistral."),
    },
)
