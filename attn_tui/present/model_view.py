"""What the app shows of a whole trace: the layer × head grid with its statistics, rollout, alignment.

Built from what the door computed in the worker (`ModelStats`: every layer's and head's
weights, their statistics, the rollout), as plain data (Grids and floats), once per result.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from attn_tui.i18n import Msg, Plural, _, pgettext
from attn_tui.present.grid import Grid, as_array
from attn_tui.present.layer_windows import layer_ranges, windows_of
from attn_tui.trace.catalog import kind_of

if TYPE_CHECKING:
    import numpy as np

    from attn_tui.trace.model_stats import ModelStats
    from attn_tui.trace.shown import Shown
    from attn_tui.trace.stage import Stage, Trace


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
    kv_map: tuple[int, ...] = ()  # grouped-query models: the key/value head of each query head
    windows: tuple[int | None, ...] = ()  # each layer's sliding window, None where it is global
    offload: str = ""  # which layers were offloaded and where ("" when none): offload_note
    rollout_moved: Grid | None = None  # the value-weighted rollout; None where no `moved` stage was traced

    def cell(self, layer: int, head: int) -> HeadCell | None:
        """The head's cell; None where the layer has fewer heads than the grid (a Qwen3-Next full layer)."""
        if len(self.cells) == self.layers * self.heads:
            return self.cells[layer * self.heads + head]
        return next((c for c in self.cells if (c.layer, c.head) == (layer, head)), None)


def sink_note(summary: ModelSummary) -> str:
    """The first-token (attention-sink) share over the whole grid: the head that gives it most, and how many
    heads give it more than half their weight (in decoders many do: the first token is where spare weight goes)."""
    top = max(summary.cells, key=lambda c: c.first_share)
    over = sum(c.first_share > 0.5 for c in summary.cells)
    return _("first-token (sink) share ⇤: highest at layer {layer} head {head} ({share}); {over} of {total} heads "
             "give the first token more than half their weight").format(
        layer=top.layer, head=top.head, share=f"{top.first_share:.3f}", over=over, total=len(summary.cells))


_SUMMARIES: weakref.WeakKeyDictionary[Shown, ModelSummary] = weakref.WeakKeyDictionary()


def summary_of(shown: Shown) -> ModelSummary | None:
    """A whole transformer's grid of heads and its rollout, made once per result from the door's statistics."""
    if shown.stats is None:
        return None
    if shown not in _SUMMARIES:
        _SUMMARIES[shown] = summarise(shown.trace, shown.stats)
    return _SUMMARIES[shown]


def summarise(trace: Trace, stats: ModelStats) -> ModelSummary:
    """Per-head grids, statistics and the rollout of a transformer's trace, from what the worker computed."""
    special = frozenset(trace.meta.special_tokens)
    tokens = trace.query_tokens
    hidden = None if stats.blocked is None else stats.blocked.numpy()  # (layers, N, N): each layer's own mask

    def grid(name: str, values: np.ndarray, masked: np.ndarray | None = None) -> Grid:
        return Grid(values, tokens, tokens, "query", "key", masked, colour_scale=kind_of(name).colour_scale,
                    special_rows=special, special_cols=special)

    cells = tuple(HeadCell(s.layer, s.head, grid("weights", as_array(stats.weights[s.layer, s.head]),
                                                 None if hidden is None else hidden[s.layer]),
                           s.entropy, s.max_weight, s.first_token_share) for s in stats.stats)
    return ModelSummary(trace.meta.title, tokens, trace.layers, trace.heads_at(None), cells,
                        grid("rollout", as_array(stats.rollout)), getattr(trace.meta, "kv_map", ()), windows_of(trace),
                        offload_note(getattr(trace.meta, "offloaded", ())),
                        None if stats.rollout_moved is None else grid("rollout", as_array(stats.rollout_moved)))


def offload_note(offloaded: tuple[str, ...]) -> str:
    """'layers 2–5 offloaded to disk': which layers' weights a model too big for --max-memory keeps off its device
    (read back while each runs), by place; "" when none were."""
    places = {"cpu": pgettext("offload", "the CPU"), "disk": pgettext("offload", "disk")}
    said = []
    for place, where in places.items():
        layers = [i for i, p in enumerate(offloaded) if p == place]
        if layers:
            said.append(str(Plural("layer {layers} offloaded to {place}", "layers {layers} offloaded to {place}",
                                   n=len(layers), layers=layer_ranges(layers), place=where)))
    return "; ".join(said)



def aligned(trace: Trace) -> bool:
    """Whether the trace has an alignment (steps × source) to show: a decode (a date model, a transformer's
    cross-attention), or a recorded program that called attention once a step over one source, as a traced
    decoder does (note 004's), whose steps' weights stacked are its alignment."""
    if trace.step_axis is not None and trace.step_axis.kind == "decoder":
        return True
    return _recorded_steps(trace) is not None


def _recorded_steps(trace: Trace) -> list[Stage] | None:
    """Each step's weights of a recorded program with one layer and head whose steps each ask one query over the
    same keys, as a decoder does (None for any other trace, a batch of sentences among them): the rows its
    alignment stacks."""
    if trace.meta.program is None or trace.layers > 1 or trace.heads > 1 or trace.steps() < 2:
        return None
    found = [trace.find("weights", step=t) for t in range(trace.steps())]
    stages = [stage for stage in found if stage is not None]
    if len(stages) < len(found) or len({stage.axes[1].labels for stage in stages}) != 1 \
            or any(stage.shape[0] != 1 for stage in stages):
        return None
    return stages


def alignment_grid(trace: Trace, filled: int, layer: int | None = None, head: int | None = None) -> Grid:
    """A decode's alignment (outputs × inputs) with only the first `filled` decoder steps drawn.

    Each row says what the step was fed and what it wrote (`1→1`); with a target, a row
    whose output differs from the target's character is labelled in red. For a decode
    with layers and heads (the transformer's cross-attention) it is the alignment of
    `layer` and `head`, or with `head` None the layer's mean over heads.
    """
    values, rows, cols = _alignment(trace, layer, head)
    meta = trace.meta
    missed: frozenset[int] = frozenset()
    if meta.fed and len(meta.fed) == len(rows):  # a decode: each row is what was fed and what was written
        missed = frozenset(t for t, written in enumerate(rows) if meta.missed(t, written))
        rows = tuple(f"{fed}→{written}" for fed, written in zip(meta.fed, rows))
    return Grid(values, rows, cols, "output", "input", colour_scale=kind_of("alignment").colour_scale,
                filled_rows=filled, miss_rows=missed)


def _alignment(trace: Trace, layer: int | None, head: int | None) -> tuple[np.ndarray, tuple[str, ...],
                                                                           tuple[str, ...]]:
    """The alignment's values (outputs × inputs) and labels: its stage, or for a decode still being made (its
    alignment comes with the last step) the rows of the steps made so far, stacked as the source stacks them."""
    import numpy as np

    recorded = _recorded_steps(trace)
    if recorded is not None:  # each step's one query row, labelled by its step
        labels = tuple(f"{t}·{stage.axes[0].labels[0]}" for t, stage in enumerate(recorded))
        return np.concatenate([as_array(stage.tensor) for stage in recorded]), labels, recorded[0].axes[1].labels
    try:
        stage = alignment_stage(trace, layer, head)
    except KeyError:
        cross = trace.layers > 1 or trace.heads > 1
        module = "cross_attn" if cross else None
        heads = [head] if head is not None or not cross else list(range(trace.heads))
        rows = [np.mean([as_array(trace.tensor("weights", layer or 0 if cross else None, h if cross else None, t,
                                               module)) for h in heads], axis=0) for t in range(trace.steps())]
        weights = trace.stage("weights", layer or 0 if cross else None, heads[0] if cross else None, 0, module)
        return np.concatenate(rows), trace.query_tokens, weights.axes[1].labels  # (T, S)
    return as_array(stage.tensor), stage.axes[0].labels, stage.axes[1].labels


def alignment_stage(trace: Trace, layer: int | None, head: int | None) -> Stage:
    """The GRU's one alignment, or the transformer's cross-attention alignment of `layer` and `head`
    (`head` None: the layer's mean over heads)."""
    if trace.layers == 1 and trace.heads == 1:
        return trace.stage("alignment")
    layer = layer or 0
    if head is None:
        return trace.stage("alignment_mean", layer)
    return trace.stage("alignment", layer, head)


def filled_rows(trace: Trace, name: str, step: int | None, module: str | None = None) -> int:
    """How many rows of the alignment exist at stage `name` of decoder `step`: the steps whose weights
    (a transformer's: cross-attention's) have been computed."""
    if step is None:  # the alignments come after every step; any other stage (the encoder's) before the first
        return trace.steps() if name.startswith("alignment") else 0
    return step + (name in ("weights", "context", "output") and module in (None, "cross_attn"))


def alignment_so_far(trace: Trace, name: str, step: int | None, layer: int | None = None,
                     head: int | None = None, module: str | None = None) -> tuple[str, Grid]:
    """The title and grid of a decode's alignment while the user is at stage `name` of decoder `step`.

    A row fills in once its step's weights exist, so stepping through a decode draws the
    alignment the way the decoder built it. A transformer's step has weights in several
    modules (`module`); only its cross-attention's fill the alignment.
    """
    steps, filled = trace.steps(), filled_rows(trace, name, step, module)
    recorded = _recorded_steps(trace)
    if recorded is not None:
        return (str(Msg("steps × source so far: {filled} of {n} recorded steps", filled=filled, n=steps)),
                alignment_grid(trace, filled))
    meta = trace.meta
    decode = meta.decoding
    what = f"('{decode.input}' → '{decode.output}')" if decode is not None else ""
    if trace.layers > 1 or trace.heads > 1:
        return (str(Msg("cross-attention alignment so far, layer {layer}, {heads}: {filled} of {steps} decoder "
                        "steps  {what}", layer=layer or 0, filled=filled, steps=steps, what=what,
                        heads=Msg("mean of the heads") if head is None else Msg("head {head}", head=head))),
                alignment_grid(trace, filled, layer, head))
    return (_("alignment so far: {filled} of {n} decoder steps").format(filled=filled, n=steps) + "  " + what,
            alignment_grid(trace, filled))


@dataclass(frozen=True)
class ModelNote:
    """What is said under the sentence once a model ran: a decoder's output (each character with whether it
    missed its target) and target, or a model's tokens with its special ones marked."""

    title: str
    output: tuple[tuple[str, bool], ...] = ()  # a decoder's characters, True where it differs from the target
    target: str | None = None
    teacher_forcing: bool = False
    tokens: tuple[tuple[str, bool], ...] = ()  # a model's tokens, True for a special one ([CLS], <s>)
    count: int = 0  # all the tokens (a long input shows only the first ones)
    decoder: bool = False
    offload: str = ""  # which layers were offloaded and where ("" when none): offload_note


def model_note_of(trace: Trace, shown: int) -> ModelNote:
    """The note of a trace, with at most `shown` tokens listed."""
    meta, decode = trace.meta, trace.meta.decoding
    if decode is not None:
        written = tuple((ch, decode.missed(step, ch)) for step, ch in enumerate(decode.output))
        return ModelNote(meta.short_title, written, decode.target, decode.teacher_forcing, decoder=True)
    special = set(meta.special_tokens)
    tokens = tuple((token, n in special) for n, token in enumerate(trace.query_tokens[:shown]))
    return ModelNote(meta.short_title, tokens=tokens, count=len(trace.query_tokens),
                     offload=offload_note(getattr(meta, "offloaded", ())))
