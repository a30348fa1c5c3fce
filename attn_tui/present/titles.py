"""What stages and axes are called on screen: their names in the language on show.

Stage names themselves (`scores`, `weights`) are identifiers that the command line and
exports use; the stage bar and captions show their titles instead (from the stage
catalog, `attn_tui.trace.catalog`), which in English are the names and in Korean the
words a learner's notes use.
"""

from __future__ import annotations

from attn_tui.i18n import NP_, pgettext
from attn_tui.trace.catalog import kind_of

AXES = (
    NP_("axis", "query"), NP_("axis", "key"), NP_("axis", "token"), NP_("axis", "dim"), NP_("axis", "hidden"),
    NP_("axis", "position"), NP_("axis", "qkv"), NP_("axis", "output"), NP_("axis", "input"),
    # the shared tail's sink and a head's own dimensions; a variant marks its own axes where it makes them
    NP_("axis", "sink"), NP_("axis", "head.dim"),
)


def stage_title(name: str) -> str:
    """A stage's name on screen (a name the catalog does not know, e.g. a recorded one, is shown as it is)."""
    return pgettext("stage", kind_of(name).title)


def axis_title(name: str) -> str:
    return pgettext("axis", name)
