"""The arithmetic of one cell of any stage, recomputed from the trace's own tensors through the stage's op.

The registry: one explainer per kind of op, gathered here from the explainer modules
(each holds `EXPLAINERS`, op kind → explainer) and nowhere else. The app's inspector
shows the lines; the tests check that every recomputed `total` equals the stage's own
cell, so what the inspector claims is what was computed.

A variant's own ops are explained in its package (`attention/variants/<name>/explain.py`), found through the
variants' registry; the shared ops in the modules beside this one, listed in `SHARED` below. An op kind explained
by two modules is refused at import.
"""

from __future__ import annotations

from types import ModuleType

from attn_tui.ask.variants import parts
from attn_tui.explain import classic, flex_ops, gate_ops, layer_ops, modern, sampler
from attn_tui.explain.common import Arithmetic, Explainer, tolerance_of
from attn_tui.trace.ops import Op, Place
from attn_tui.trace.stage import Trace

__all__ = ["EXPLAINERS", "MODULES", "Arithmetic", "explain"]

SHARED: tuple[ModuleType, ...] = (classic, modern, layer_ops, flex_ops, sampler, gate_ops)
# every explainer module, each with its EXPLAINERS: the shared ones, then each variant's `explain`
MODULES: tuple[ModuleType, ...] = SHARED + parts("explain")


def _registry(modules: tuple[ModuleType, ...]) -> dict[type[Op], Explainer]:
    found: dict[type[Op], Explainer] = {}
    for module in modules:
        for op, explainer in module.EXPLAINERS.items():
            if op in found:
                raise TypeError(f"{op.__name__} is explained twice (again in {module.__name__})")
            found[op] = explainer
    return found


EXPLAINERS: dict[type[Op], Explainer] = _registry(MODULES)


def explain(trace: Trace, place: Place, index: tuple[int, ...]) -> Arithmetic:
    """The arithmetic behind `stage[index]` for the stage at `place`; one index per axis of the stage."""
    stage = trace.at(place)
    trace.fill_step(place.layer, place.step)  # its operands: the same layer's stages at the same step
    title, lines, total = EXPLAINERS[type(stage.op)](trace, stage, index)
    return Arithmetic(title, lines, total, float(stage.data[index].double()), tolerance_of(stage.data.dtype))
