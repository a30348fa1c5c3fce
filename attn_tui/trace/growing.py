"""A trace that gains steps while readers look at the earlier ones.

`Growing` holds the latest whole snapshot; `Publisher` is how a source making its trace step by step hands
out each step's snapshot. Apart from `trace.steps` (what a step is), which the Trace itself reads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence

import torch

from attn_tui.trace.meta import RunMeta
from attn_tui.trace.stage import Stage, Trace
from attn_tui.trace.steps import Step, Steps


class Growing:
    """A trace being written step by step, as its readers see it.

    `latest` is always a whole snapshot: `append` builds the grown trace aside and then
    swaps one reference, so a reader on another thread sees the old steps or the new, never
    half a step; a snapshot once handed out is never changed.
    """

    def __init__(self, first: Trace) -> None:
        self._latest = first
        self._writing = threading.Lock()  # one writer at a time; readers take no lock

    @property
    def latest(self) -> Trace:
        return self._latest

    def append(self, step: Step, stages: Sequence[Stage], meta: RunMeta | None = None,
               query_tokens: tuple[str, ...] | None = None, inputs: Mapping[str, torch.Tensor] | None = None) -> Trace:
        """Publish the trace with `step` and its stages (and the inputs they read) added; the new snapshot is
        returned."""
        with self._writing:
            grown = self._latest.grown(step, stages, meta, query_tokens, inputs)
            self._latest = grown
        return grown


OnStep = Callable[["Trace"], None]  # handed each snapshot of a trace as a step is made


class Publisher:
    """Hands `on_step` a snapshot of a trace after each step: the stages and inputs the step added to the
    source's own (private, still growing) trace, published through `Growing` so no reader sees half a step.

    A source makes its trace as it always does and calls `step` as each step is done (the date decoders for
    each character they write; a model writing token by token for each token)."""

    def __init__(self, trace: Trace, on_step: OnStep | None) -> None:
        self.trace, self.on_step = trace, on_step
        self.growing = Growing(trace.copy()) if on_step is not None else None
        self._inputs = set(trace.inputs)

    def step(self, step: Step, meta: RunMeta, query_tokens: tuple[str, ...]) -> None:
        """Step `step` is made: name it on the source's trace and, when someone waits for it, publish it."""
        trace = self.trace
        trace.step_axis = trace.step_axis.plus(step) if trace.step_axis is not None else Steps(step.kind).plus(step)
        if self.growing is None or self.on_step is None:
            return
        added = list(trace.stages.of_step(step.index).values())
        inputs = {name: value for name, value in trace.inputs.items() if name not in self._inputs}
        self._inputs = set(trace.inputs)
        self.on_step(self.growing.append(step, added, meta, query_tokens, inputs))
