"""The capabilities the shared tracer lends a family beyond a LayerSpec, each named, each switched on in `Family`.

A family whose layers are all keys and values over a softmax needs none. The others say which they have:

- `OwnLayer`: layers no LayerSpec describes, which record their own stages and keep their own cache when the model
  writes. Two are built here: `latent_projection` (keys and values rebuilt from a cached latent, DeepSeek's
  multi-head latent attention) and `per_layer_state` (a recurrent state in place of keys and values, a linear-
  attention layer such as Qwen3-Next's Gated DeltaNet).
- `AfterHeads`: stages added after the tracer's own for a layer's heads, at the prompt and at each written step
  (an output gate, a difference of paired heads).

The tracer (`shared/tracer.py`), the writer (`generate.py`) and a written step's later stages (`lazy_steps.py`)
ask these parts and nothing else, so a new family with a known capability is its adapter and one line. This module
imports no torch: families declare their parts at import, before the app's first frame.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from attn_tui.sources.families.spec import LatentFamily, OwnLayer, OwnStep, every_layer

if TYPE_CHECKING:
    from attn_tui.sources.model_run import LoadedModel, ModelRun
    from attn_tui.trace.stage import Trace


def latent_projection(latent: LatentFamily, holds: Callable[[Any, int], bool] = every_layer) -> OwnLayer:
    """Multi-head latent attention: each layer caches a normed latent and a shared rotary key, and rebuilds every
    head's keys and values from them (`latent`: how the family's adapter reads its sizes, weights, rotation and
    stages)."""

    def record(run_: ModelRun, trace: Trace, layer: int) -> float:
        return latent.record_layer(run_, trace, layer)

    def stepper(loaded: LoadedModel, layer: int) -> OwnStep:
        from attn_tui.sources.families.shared.latent_step import LatentStep

        return LatentStep(loaded, layer, latent)

    return OwnLayer("latent projection", holds, record, stepper)


def per_layer_state(holds: Callable[[Any, int], bool], record: Callable[[ModelRun, Trace, int], None]) -> OwnLayer:
    """A Gated DeltaNet layer: a d_k × d_v state per value head in place of keys and values, its writes read as an
    implied attention matrix (`record`: the adapter's own stages of one such layer)."""

    def recorded(run_: ModelRun, trace: Trace, layer: int) -> None:
        record(run_, trace, layer)

    def stepper(loaded: LoadedModel, layer: int) -> OwnStep:
        from attn_tui.sources.families.shared.state_step import StateStep

        return StateStep(loaded, layer)

    return OwnLayer("per-layer state", holds, recorded, stepper)
