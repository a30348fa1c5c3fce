"""attn-tui: watch attention compute itself, stage by stage, in the terminal.

The small public API (nothing heavy is imported until it is used):

- `attn_tui.compute(text, variant=…, mask=…, …)`: a trace, with the options of `attn-tui stages`;
- `attn_tui.record()`: `with attn_tui.record() as rec: model(x)`, then `rec.trace`;
- `attn_tui.label(tokens)`: name the queries (and keys) of what is being recorded.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["Trace", "compute", "label", "record"]

if TYPE_CHECKING:
    from collections.abc import Sequence

    from attn_tui.api import Recording, Trace


def compute(text: str | None = None, **options: Any) -> Trace:
    """A trace of attn-tui's own attention (or a model), with the options of `attn-tui stages`."""
    from attn_tui.api import compute as run

    return run(text, **options)


def record(tokens: Sequence[str] | None = None, key_tokens: Sequence[str] | None = None,
           max_calls: int = 64) -> Recording:
    """A context manager recording the attention the code inside it computes."""
    from attn_tui.api import record as start

    return start(tokens, key_tokens, max_calls)


def label(tokens: Sequence[str], key_tokens: Sequence[str] | None = None) -> None:
    """Name the queries (and keys) of the attention being recorded; nothing happens when nothing is recorded."""
    import sys

    if "attn_tui.sources.recorder" not in sys.modules:
        return  # nothing can be recording: do not import torch for nothing
    from attn_tui.sources.recorder import label as set_labels

    set_labels(list(tokens), None if key_tokens is None else list(key_tokens))


def __getattr__(name: str) -> Any:
    if name == "Trace":
        from attn_tui.api import Trace

        return Trace
    raise AttributeError(f"module 'attn_tui' has no attribute {name!r}")
