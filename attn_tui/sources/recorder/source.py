"""The recorder as a source: a script run under the recorder in a process of its own, or a block recorded already.

`attn-tui trace`, `attn_tui.record()` and the app all reach the user's code through the one door
(`sources.run`) with a `RecordAsk`; the supervised child, its limits and its refusals are those of
`supervise.run_script`.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from attn_tui.ask.settings import Ask, RecordAsk
from attn_tui.trace.meta import RecordedRun

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace


class RecorderSource:
    def handles(self, ask: Ask) -> bool:
        return isinstance(ask, RecordAsk)

    def trace(self, ask: Ask, max_memory: int | None = None) -> Trace:
        assert isinstance(ask, RecordAsk)
        if ask.held is not None:  # recorded already: the very trace, never run again
            from attn_tui.trace.stage import Trace

            held = ask.held.recorded
            if not isinstance(held, Trace):  # the ask holds it untyped (ask sits below the trace)
                raise TypeError(f"a recorded ask holds a {type(held).__name__}, not a Trace")
            return held
        from dataclasses import replace

        from attn_tui.ask.budget import memory_limit
        from attn_tui.sources.recorder.script import sample_script
        from attn_tui.sources.recorder.supervise import run_script

        path = sample_script(ask.sample) if ask.sample is not None else Path(ask.script)
        ran = run_script(path, ask.args, ask.max_calls, quiet_stdout=ask.quiet_stdout, timeout=ask.timeout,
                         budget=memory_limit(max_memory), debug=ask.debug)
        if ran.threads:  # the file's process ended without waiting for them: the front end says so
            assert isinstance(ran.trace.meta, RecordedRun)
            ran.trace.meta = replace(ran.trace.meta, threads=ran.threads)
        return ran.trace
