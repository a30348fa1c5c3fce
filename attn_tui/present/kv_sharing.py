"""Which query heads share which key/value head (grouped-query attention), as plain data for any view.

Read from the trace's metadata (`kv_map`: the key/value head of each query head), which
the gqa variant and grouped-query models (SmolLM2) record, so the view shows exactly the
sharing the stages were computed with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg, Plural

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace


@dataclass(frozen=True)
class KvGroup:
    """One key/value head and the query heads that read it."""

    kv_head: int
    query_heads: tuple[int, ...]


@dataclass(frozen=True)
class KvSharing:
    """The query-head → key/value-head map of a grouped-query trace, and the query head on show."""

    query_heads: int
    groups: tuple[KvGroup, ...]
    current: int

    @property
    def kv_heads(self) -> int:
        return len(self.groups)

    def kv_of(self, head: int) -> int:
        return next(group.kv_head for group in self.groups if head in group.query_heads)

    @property
    def kind(self) -> Msg:
        if self.kv_heads == 1:
            return Msg("multi-query attention: one key/value head for all")
        if self.kv_heads == self.query_heads:
            return Msg("multi-head attention: every query head has its own keys and values")
        return Msg("grouped-query attention")

    @property
    def caption(self) -> Msg:
        """What the sharing means: how many query heads each key/value head serves, and the cache it saves."""
        return Plural("{queries} query heads share {n} key/value head ({kind}); a decoder caches keys and values "
                      "for {n} head instead of {queries}",
                      "{queries} query heads share {n} key/value heads ({kind}); a decoder caches keys and values "
                      "for {n} heads instead of {queries}", queries=self.query_heads, n=self.kv_heads, kind=self.kind)


def kv_sharing(trace: Trace, current: int = 0) -> KvSharing | None:
    """The sharing of a grouped-query trace (None when every head has its own keys and values, or one head)."""
    return sharing_of(getattr(trace.meta, "kv_map", ()), current)


def sharing_of(mapping: tuple[int, ...], current: int = 0) -> KvSharing | None:
    """The sharing a query-head → key/value-head map describes (None for an empty map)."""
    if not mapping:
        return None
    groups = tuple(KvGroup(kv, tuple(h for h, g in enumerate(mapping) if g == kv))
                   for kv in sorted(set(mapping)))
    return KvSharing(len(mapping), groups, max(0, min(current, len(mapping) - 1)))
