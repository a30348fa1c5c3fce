"""What a stage is made from: the inputs and parameters its op reads, and theirs in turn through the stages it
reads, so an export of one stage writes what recomputes it and not every layer's inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from attn_tui.trace.ops import Place
from attn_tui.trace.stage import Stage, Trace


def names_read(trace: Trace, stages: Iterable[Stage]) -> set[str]:
    """Every name (of an input, a parameter) an op of `stages` reads, or an op of a stage they read, transitively."""
    names: set[str] = set()
    seen: set[Place] = set()
    todo: list[object] = [stage.op for stage in stages]
    while todo:
        value = todo.pop()
        if isinstance(value, Place):
            if value not in seen:
                seen.add(value)
                read = trace.stages.get(value)
                if read is not None:
                    todo.append(read.op)
        elif isinstance(value, str):
            names.add(value)
        elif isinstance(value, tuple | list):
            todo.extend(value)
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            todo.extend(getattr(value, field.name) for field in dataclasses.fields(value))
    return names


def inputs_of(trace: Trace, stages: list[Stage] | None) -> list[str]:
    """The inputs an export of `stages` (None: all) writes: those their ops read, and those no op of the trace
    reads (what was typed, shown as given), in the trace's order."""
    if stages is None:
        return list(trace.inputs)
    wanted, read_anywhere = names_read(trace, stages), names_read(trace, trace)
    return [name for name in trace.inputs if name in wanted or name not in read_anywhere]
