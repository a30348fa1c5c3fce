"""The app's heatmap and the command line's table draw every stage from one view-model, so they agree."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from attn_tui.ask.variants import VARIANTS
from attn_tui.attention.engine import compute
from attn_tui.present.printed import printed_rollout, printed_stage, printed_trace
from attn_tui.present.stage_view import stage_view
from attn_tui.render.heatmap import grid_scale
from attn_tui.render.stage_table import print_trace
from attn_tui.trace.catalog import kind_of
from attn_tui.trace.stage import Trace
from tests.conftest import matrices, sentence


def _agree(trace: Trace) -> None:
    for stage in trace:
        place = stage.place
        app = stage_view(trace, place.name, place.layer, place.head, 0, place.step, place.module)
        cli = printed_stage(trace, stage)
        kind = kind_of(stage.name)
        assert app.grid.probability == cli.facts.probability == kind.probability, stage.key
        assert (app.grid.colour_scale == cli.facts.colour_scale == cli.slices[0][1].colour_scale
                == kind.colour_scale), stage.key
        assert grid_scale(app.grid) == grid_scale(cli.slices[0][1]), stage.key  # the same colours
        if stage.data.dim() != 3:  # a 3-D stage's app note says which query slice is on show
            assert (app.note,) == (cli.facts.notes or ("",)), stage.key


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_app_and_cli_agree_on_every_stage_of_every_variant(variant: str) -> None:
    settings: dict[str, object] = {"variant": variant, "dim": 4, "mask": "causal"}
    if "heads" in VARIANTS[variant].options:
        settings["heads"] = 2
    _agree(compute(sentence("나는 어제 학교에 갔다", **settings)))


def test_the_sink_row_sum_note_is_the_same_in_the_app_and_the_table() -> None:
    """The two views disagreed here: the table said every row sums to 1, while a sink takes its share."""
    trace = compute(matrices([[1, 0], [0, 1]], [[1, 0], [0, 1]], [[1, 2], [3, 4]], variant="sink", heads=1,
                             custom_mask=[[0, 0], [1, 1]]))
    weights = trace.stage("weights")
    app = stage_view(trace, "weights", None, None, 0)
    assert app.note.startswith("rows sum to 1 − p_sink (±") and "rows [0] sum to 0" in app.note
    out = io.StringIO()
    print_trace(printed_trace(trace, [weights]), Console(file=out, width=100))
    assert app.note in out.getvalue()


def test_the_date_models_alignments_are_probabilities_in_both_views() -> None:
    """The other disagreement: the transformer's mean alignment was a probability in the app only."""
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.sources import run

    trace = run(ModelAsk("transformer-dates", "22 Nov 2026")).trace
    mean = next(s for s in trace if s.name == "alignment_mean")
    assert printed_stage(trace, mean).facts.probability
    _agree(trace)


def test_the_rollout_is_drawn_as_the_app_draws_it() -> None:
    import numpy as np

    from attn_tui.present.grid import Grid
    from attn_tui.present.model_view import HeadCell, ModelSummary

    tokens = ("a", "b")
    rollout = Grid(np.array([[0.9, 0.1], [0.4, 0.6]]), tokens, tokens, "query", "key",
                   colour_scale=kind_of("rollout").colour_scale)
    summary = ModelSummary("m", tokens, 1, 1, (HeadCell(0, 0, rollout, 0.5, 0.9, 0.6),), rollout)
    printed = printed_rollout(summary)
    assert printed.facts.probability and grid_scale(printed.slices[0][1]).lo == 0.0  # 0…1, not its own 0.1…0.9
