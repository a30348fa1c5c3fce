"""The query-head → key/value-head map drawn as rows: each key/value head with the query heads that read it."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from attn_tui.i18n import _
from attn_tui.present.kv_sharing import KvSharing

CURRENT = "bold black on yellow"
GROUP = "bold"


def sharing_lines(sharing: KvSharing) -> list[Text]:
    """One line per key/value head: `K/V 1 ◀ Q3 Q4 Q5`, the query head on show and its group marked."""
    lines = [Text(str(sharing.caption), style="dim")]
    own = sharing.kv_of(sharing.current)
    for group in sharing.groups:
        line = Text()
        line.append(_("key/value head {kv}").format(kv=group.kv_head), style=GROUP if group.kv_head == own else "")
        line.append("  ◀  ")
        for n, head in enumerate(group.query_heads):
            line.append(" " if n else "")
            line.append(f" Q{head} ", style=CURRENT if head == sharing.current else
                        (GROUP if group.kv_head == own else "dim"))
        lines.append(line)
    return lines


def sharing_block(sharing: KvSharing) -> Group:
    return Group(*sharing_lines(sharing))


def sharing_text(sharing: KvSharing) -> str:
    """The same lines as plain text (the CLI, tests)."""
    return "\n".join(line.plain.rstrip() for line in sharing_lines(sharing))
