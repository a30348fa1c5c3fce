"""A step of a trace in the words its own step axis has for it: `tile 0`, `decoder step 2`, `call 0, batch item 1`.

The CLI's table and the stage picker read these, so a tile is never printed as a generic
"step" (whose Korean said 디코더 단계, decoder step, even for a flash tile).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from attn_tui.present.positions import step_name

if TYPE_CHECKING:
    from attn_tui.trace.stage import Trace


def _own_label(trace: Trace, step: int, module: str | None) -> str | None:
    """The step's full label, where the step axis speaks for this place: a recorded trace names its steps by
    one module's calls, so a place of another module (of several) gets no label."""
    steps = trace.step_axis
    if steps is None or not 0 <= step < len(steps):
        return None
    if module is not None and len([m for m in trace.modules() if m is not None]) > 1:
        return None
    return str(steps.label(step))


def printed_step(trace: Trace, step: int, module: str | None = None) -> str:
    """What the CLI prints for a stage's step: a recorded call as `call 0, batch item 1`, any other step by its
    short name (`tile 0`, `decoder step 2`, `token 3`)."""
    steps = trace.step_axis
    if steps is not None and steps.kind == "call":
        label = _own_label(trace, step, module)
        if label is not None:
            return label
    return str(step_name(trace, step))


def step_label(trace: Trace, step: int, module: str | None = None) -> str | None:
    """The step's full label for the picker (`tile 2 (keys 8–11)`, `decoder step 3: '2'`); None without one."""
    return _own_label(trace, step, module)
