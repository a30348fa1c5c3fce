"""What stages and axes are called on screen: their names in the language on show.

Stage names themselves (`scores`, `weights`) are identifiers that the command line and
exports use; the stage bar and captions show these titles instead, which in English are
the names and in Korean the words a learner's notes use.
"""

from __future__ import annotations

from attn_tui.i18n import NP_, pgettext

STAGES = (
    NP_("stage", "embedding"), NP_("stage", "positional"), NP_("stage", "embedded_pos"), NP_("stage", "query"),
    NP_("stage", "key"), NP_("stage", "value"), NP_("stage", "qkv_proj"), NP_("stage", "query_proj"),
    NP_("stage", "key_proj"), NP_("stage", "energy"), NP_("stage", "scores"), NP_("stage", "scaled"),
    NP_("stage", "masked"), NP_("stage", "weights"), NP_("stage", "output"), NP_("stage", "context"),
    NP_("stage", "concat"), NP_("stage", "projected"), NP_("stage", "alignment"),
    # a recorded program's inputs before their projections (`attn-tui trace`)
    NP_("stage", "input"), NP_("stage", "key_input"), NP_("stage", "value_input"),
)
AXES = (
    NP_("axis", "query"), NP_("axis", "key"), NP_("axis", "token"), NP_("axis", "dim"), NP_("axis", "hidden"),
    NP_("axis", "position"), NP_("axis", "qkv"), NP_("axis", "output"), NP_("axis", "input"),
)
# Today's variants (rope, gqa, alibi, sink, flash) and the real models traced like them.
MODERN_STAGES = (
    NP_("stage", "query_rot"), NP_("stage", "key_rot"), NP_("stage", "q_proj"), NP_("stage", "k_proj"),
    NP_("stage", "v_proj"), NP_("stage", "bias"), NP_("stage", "biased"), NP_("stage", "sink_mass"),
    NP_("stage", "tile_scores"), NP_("stage", "running_max"), NP_("stage", "rescale"), NP_("stage", "denominator"),
    NP_("stage", "accumulator"),
)
MODERN_AXES = (NP_("axis", "sink"), NP_("axis", "max"), NP_("axis", "rescale"), NP_("axis", "sum"),
               NP_("axis", "head.dim"))


def stage_title(name: str) -> str:
    """A stage's name on screen (a name without a title, e.g. a recorded one, is shown as it is)."""
    return pgettext("stage", name)


def axis_title(name: str) -> str:
    return pgettext("axis", name)
