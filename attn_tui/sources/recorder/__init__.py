"""The user's own attention code as a source: record it while it runs, then lay it out as a Trace.

`Recording` is the context manager behind `attn_tui.record()`; `supervise.run_script` runs a
file under it in a process of its own, as `attn-tui trace FILE.py` does. Stages get the usual names where the
pattern is recognised (scores, scaled, masked, weights, output, query_proj, energy, …)
and core ops the inspector recomputes; each carries the line of code that made it.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_tui.sources.recorder.capture import Recorder
    from attn_tui.trace.stage import Trace


_ACTIVE: list[Recording] = []  # the recordings whose block is running, innermost last
MAX_CALLS = 4096  # calls of one module a recording keeps at most (as `attn-tui trace --max-calls` allows)


def label(tokens: list[str] | tuple[str, ...], key_tokens: list[str] | tuple[str, ...] | None = None) -> None:
    """Name the queries (and keys) of the attention being recorded; does nothing when nothing is recorded.

    A script run by `attn-tui trace` calls this to show its words instead of q0, q1, …;
    run by plain `python` it costs nothing.
    """
    for recording in _ACTIVE:
        recording.tokens = words(tokens, "tokens")
        recording.key_tokens = words(key_tokens, "key_tokens")


def words(given: object, name: str) -> tuple[str, ...] | None:
    """Labels as given: None, a sentence (split on whitespace, as everywhere in attn-tui), or a list of words."""
    from attn_tui.errors import ConfigError
    from attn_tui.i18n import N_, Msg
    from attn_tui.io.files import short_repr

    if given is None:
        return None
    if isinstance(given, str):
        return tuple(given.split())
    if not isinstance(given, (list, tuple)):
        raise ConfigError(Msg("{name} must be {kind}, not {value}", name=f"{name}=", kind=Msg(N_("a list of words")),
                              value=short_repr(given)))
    return tuple(str(t) for t in given)


class Recording:
    """`with Recording() as rec: model(x)` — afterwards `rec.recorded` holds what the code computed.

    The recorder sits below the door (`sources.run`), so it does not call it: `attn_tui.record()`'s
    Recording (api.py) adds `trace`, which hands this block to the door as every other ask.

    `tokens` (and `key_tokens`, for cross-attention) label the queries and keys when their
    count matches; `max_calls` is how many calls of each module are kept (the last ones).
    """

    def __init__(self, tokens: Sequence[str] | None = None, key_tokens: Sequence[str] | None = None,
                 max_calls: int = 64,
                 script: str = "") -> None:
        from attn_tui.errors import ConfigError
        from attn_tui.i18n import Msg
        from attn_tui.io.files import short_repr
        from attn_tui.sources.recorder.capture import Recorder

        self.tokens = words(tokens, "tokens")
        self.key_tokens = words(key_tokens, "key_tokens")
        if isinstance(max_calls, bool) or not isinstance(max_calls, int) or not 1 <= max_calls <= MAX_CALLS:
            raise ConfigError(Msg("{name} must be a whole number between {lo} and {hi}, not {value}",
                                  name="max_calls=", lo=1, hi=MAX_CALLS, value=short_repr(max_calls)))
        self.script = script
        self.recorder: Recorder = Recorder(max_calls)
        self._trace: Trace | None = None

    def __enter__(self) -> Recording:
        self.recorder.__enter__()
        _ACTIVE.append(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self in _ACTIVE:
            _ACTIVE.remove(self)
        self.recorder.__exit__(kind, exc, tb)

    @property
    def recorded(self) -> Trace:
        """The trace of what ran inside the block (built once, when first asked for after the block;
        asked inside the block, what ran so far)."""
        if self._trace is not None:
            return self._trace
        from attn_tui.sources.recorder.build import build

        trace = build(self.recorder, self.script, self.tokens, self.key_tokens)
        if self not in _ACTIVE:
            self._trace = trace
        return trace
