"""The recorder's named extensions: what it changes in the process while it records, and what it lets go.

Each hook is a `RecorderHook` (hook.py) in a module of its own; `HOOKS` is the one list the recorder walks, in
the order the hooks are entered (and, reversed, left):

- `THREADS` (threads.py): the threads and thread-pool tasks the recorded code starts run under the recording's
  mode; the threads already running are named in the trace.
- `FLEX_ATTENTION` (flex.py): flex_attention, which hides its call from a TorchFunctionMode, is wrapped wherever
  it is held by name, and its inner op is heard where the wrapper was not called (`FLEX_ATTENTION.heard`). How
  a recorded call is laid out as stages: flex_layout.py, flex_lazy.py (by tiles), flex_parts.py.
- `FROZEN_HEAP` (quiet_gc.py): the program's old objects out of the collector's sight, so no full collection
  walks them inside the recorded forward.
- `COMPILE_STANCE` (eager.py): code compiled with torch.compile runs as written, in the mode's sight.
- `PRUNING` (prune.py): once an attention call is kept, what made its projections' inputs is let go.

The heap's freeze and the compiler's stance belong to the process: recordings share them (process_wide.py).
"""

from __future__ import annotations

from attn_tui.sources.recorder.hooks.eager import COMPILE_STANCE
from attn_tui.sources.recorder.hooks.flex import FLEX_ATTENTION
from attn_tui.sources.recorder.hooks.hook import RecorderHook
from attn_tui.sources.recorder.hooks.prune import PRUNING
from attn_tui.sources.recorder.hooks.quiet_gc import FROZEN_HEAP
from attn_tui.sources.recorder.hooks.threads import THREADS

HOOKS: tuple[RecorderHook, ...] = (THREADS, FLEX_ATTENTION, FROZEN_HEAP, COMPILE_STANCE, PRUNING)

__all__ = ["COMPILE_STANCE", "FLEX_ATTENTION", "FROZEN_HEAP", "HOOKS", "PRUNING", "THREADS", "RecorderHook"]
