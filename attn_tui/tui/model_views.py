"""What the app shows of a whole model: the layer × head grid with its statistics, rollout, alignment.

Built in the compute worker (torch is imported inside the functions only), handed to the
app as plain data (Grids and floats), so the UI thread never runs torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from attn_tui.render.heatmap import Grid, as_array

ROLLOUT_FORMULA = "R = Π_l (½·mean_h A_l + ½·I), rows renormalised  (attention rollout, Abnar & Zuidema 2020)"


@dataclass(frozen=True)
class HeadCell:
    """One head of the grid: its weights and what they do at a glance."""

    layer: int
    head: int
    grid: Grid
    entropy: float  # mean over real query rows, nats
    max_weight: float
    first_share: float  # mean weight on the first token


@dataclass(frozen=True)
class ModelSummary:
    """A transformer over one sentence: every head's weights and statistics, and the rollout."""

    name: str
    tokens: tuple[str, ...]
    layers: int
    heads: int
    cells: tuple[HeadCell, ...]  # layer-major
    rollout: Grid

    def cell(self, layer: int, head: int) -> HeadCell:
        return self.cells[layer * self.heads + head]


def summarise(run: Any) -> ModelSummary:
    """Per-head statistics and rollout of an hf.ModelRun, from the model's own attentions."""
    from attn_tui.models.summary import head_stats, rollout, stack

    weights = stack(run.attentions)  # (layers, heads, N, N)
    real = run.mask.any(dim=0)  # (N,) keys that are not padding
    special = frozenset(run.special)
    tokens = tuple(run.tokens)
    hidden = (~run.mask).cpu().numpy()

    def grid(values: Any, masked: Any = None) -> Grid:
        return Grid(as_array(values), tokens, tokens, "query", "key", masked, probability=True,
                    special_rows=special, special_cols=special)

    cells = tuple(HeadCell(s.layer, s.head, grid(weights[s.layer, s.head], hidden), s.entropy, s.max_weight,
                           s.first_token_share) for s in head_stats(weights, real))
    return ModelSummary(run.loaded.name, tokens, run.loaded.layers, run.loaded.heads, cells,
                        grid(rollout(weights, real)))


def alignment_grid(trace: Any, filled: int) -> Grid:
    """The seq2seq alignment (outputs × inputs) with only the first `filled` decoder steps drawn."""
    stage = trace.stage("alignment")
    return Grid(as_array(stage.tensor), stage.axes[0].labels, stage.axes[1].labels, "output", "input",
                probability=True, filled_rows=filled)


def is_decode(trace: Any) -> bool:
    """A seq2seq decode (stages repeat per decoder step), as opposed to one attention."""
    return trace.steps() > 0


def explanation_variant(trace: Any) -> str:
    """Which explanations apply: a decode's own first, then its attention kind's."""
    if is_decode(trace):
        return f"seq2seq/{trace.config.get('attention', 'additive')}"
    return trace.variant
