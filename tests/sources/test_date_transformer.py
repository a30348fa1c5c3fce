"""The transformer date model as a source: explainable cells, the command line, the alignment so far."""

from __future__ import annotations

import itertools
import json
import math

import pytest

from attn_tui.ask.settings import ModelAsk
from attn_tui.cli import main
from attn_tui.explain.cell import explain
from attn_tui.present.model_view import alignment_so_far
from attn_tui.sources import run

pytestmark = pytest.mark.slow  # each test runs the trained date transformer

NAME = "transformer-dates"


def _close(a: float, b: float) -> bool:
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=1e-4, abs_tol=1e-5)


@pytest.fixture(scope="module")
def trace():
    return run(ModelAsk(NAME, "22 Nov 2026")).trace


def test_corner_cells_of_every_stage_are_recomputed(trace) -> None:
    """The first and last cell of each of the trace's stages (every cell is checked in the slow test)."""
    for stage in trace:
        for index in {tuple(0 for _ in stage.shape), tuple(n - 1 for n in stage.shape)}:
            arithmetic = explain(trace, stage.place, index)
            assert _close(arithmetic.total, arithmetic.expected), (stage.key, index, arithmetic)
            assert arithmetic.lines and arithmetic.title


@pytest.mark.slow
def test_every_cell_of_a_transformer_decode_is_recomputed(trace) -> None:
    for stage in trace:
        for index in itertools.product(*(range(n) for n in stage.shape)):
            arithmetic = explain(trace, stage.place, index)
            assert _close(arithmetic.total, arithmetic.expected), (stage.key, index, arithmetic)


def test_the_inspector_names_the_layers_own_weights(trace) -> None:
    query = trace.stage("query", 1, 2, 3, "cross_attn")
    assert "decoder.1.cross_attn.W_q.weight[32]" in explain(trace, query.place, (0, 0)).title
    key = trace.stage("key", 1, 2, 3, "cross_attn")
    assert "memory" in explain(trace, key.place, (0, 0)).title
    assert "√d_k" in explain(trace, trace.stage("scaled", 0, 0, None, "enc_attn").place, (1, 2)).title
    mean = trace.stage("alignment_mean", 1, None, None, "cross_attn")
    assert "mean of 4" in explain(trace, mean.place, (0, 0)).title


def test_the_alignment_fills_in_at_each_steps_cross_attention(trace) -> None:
    title, grid = alignment_so_far(trace, "weights", 2, 1, 3, "self_attn")
    assert grid.filled_rows == 2 and "layer 1, head 3" in title  # step 2's self-attention: its row is not there
    title, grid = alignment_so_far(trace, "weights", 2, 1, 3, "cross_attn")
    assert grid.filled_rows == 3
    assert (grid.values == trace.tensor("alignment", 1, 3, None, "cross_attn").numpy()).all()
    title, grid = alignment_so_far(trace, "alignment_mean", None, 0, None, "cross_attn")
    assert grid.filled_rows == trace.steps() and "mean of the heads" in title
    assert (grid.values == trace.tensor("alignment_mean", 0, None, None, "cross_attn").numpy()).all()
    gru = run(ModelAsk("seq2seq-dates", "22 Nov 2026")).trace
    assert alignment_so_far(gru, "weights", 2)[1].filled_rows == 3  # the GRU's, as before


def test_cli_json_selects_a_layer_and_head(capsys) -> None:
    assert main(["stages", "--model", NAME, "--text", "2026년 11월 22일", "--layer", "1", "--head", "2",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["output"] == "2026-11-22" and doc["settings"]["layers"] == 2 and doc["settings"]["heads"] == 4
    assert {(s["layer"], s["head"]) for s in doc["stages"]} == {(1, 2), (1, None)}
    weights = [s for s in doc["stages"] if s["name"] == "weights" and s["step"] is not None]
    assert len(weights) == 2 * 11  # self- and cross-attention at each of 11 steps
    assert doc["stages"][-1]["name"] == "alignment_mean"


@pytest.mark.parametrize("argv,fragment", [
    (["stages", "--model", NAME, "--text", "22 Nov 2026", "--layer", "2"], "--layer 2 is out of range"),
    (["stages", "--model", NAME, "--text", "22 Nov 2026", "--head", "4"], "--head 4 is out of range"),
    (["stages", "--model", NAME, "--text", "22 Nov 2026", "--pad-to", "30"], "--pad-to does not apply"),
    (["stages", "--model", NAME, "--text", "22 Nov 2026 ★"], "never seen the character"),
    (["stages", "--model", NAME, "--text", "22 Nov 2026", "--teacher-forcing"], "needs --target"),
    (["stages", "--model", NAME, "--text", "22 Nov 2026", "--stage", "energy"], "no stage 'energy'"),
    (["heads", "--model", NAME, "--text", "22 Nov 2026"], "encoder-decoder"),
    (["train-seq2seq", "--arch", "transformer", "--attention", "general"], "--attention applies to --arch gru"),
    (["stages", "--model", "seq2seq-dates", "--text", "22 Nov 2026", "--head", "1"], "--head does not apply"),
])
def test_cli_refusals_are_one_line(capsys, argv: list[str], fragment: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and fragment in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow
def test_train_command_writes_a_transformer_checkpoint(tmp_path, capsys) -> None:
    out = tmp_path / "tiny.pt"
    assert main(["train-seq2seq", "--arch", "transformer", "--epochs", "1", "--steps", "5", "--out", str(out)]) == 0
    assert out.exists() and "held-out exact match" in capsys.readouterr().out
    from attn_tui.models.seq2seq.train import load
    from attn_tui.models.seq2seq.transformer import DateTransformer

    assert isinstance(load(out), DateTransformer)


@pytest.mark.parametrize("forcing", [False, True])
def test_both_date_models_align_the_same_input_side_by_side(forcing: bool) -> None:
    """What a compare view needs: the GRU's and the transformer's alignments of one input, teacher-forced or not."""
    text, target = "Sunday, 22 Nov 2026", "2026-11-22"
    gru = run(ModelAsk("seq2seq-dates", text, target=target, teacher_forcing=forcing)).trace
    transformer = run(ModelAsk(NAME, text, target=target, teacher_forcing=forcing)).trace
    assert gru.key_tokens == transformer.key_tokens and gru.query_tokens == transformer.query_tokens
    for step in range(gru.steps()):
        _, left = alignment_so_far(gru, "weights", step)
        _, right = alignment_so_far(transformer, "weights", step, 1, 0, "cross_attn")
        assert left.filled_rows == right.filled_rows == step + 1 and left.values.shape == right.values.shape
    year = slice(len(text) - 4, len(text))
    assert gru.tensor("alignment")[:4, year].sum(-1).min() > 0.5  # both read the year from the year
    assert max(float(transformer.tensor("alignment", 1, h, None, "cross_attn")[:4, year].sum(-1).min())
               for h in range(transformer.heads)) > 0.5


def test_each_layers_geometry_redoes_its_cross_attention(trace) -> None:
    """Every layer records its geometry, and its scale alone turns the recorded q and k into the weights."""
    import torch

    assert sorted(trace.geometry) == list(range(trace.layers))
    for layer in range(trace.layers):
        geometry = trace.geometry_of(layer)
        assert geometry is not None and geometry.mask == "full" and geometry.positional.kind == "absolute"
        for head in range(trace.heads):
            q = trace.tensor("query", layer, head, 0, "cross_attn").double()
            k = trace.tensor("key", layer, head, 0, "cross_attn").double()
            weights = trace.tensor("weights", layer, head, 0, "cross_attn").double()
            torch.testing.assert_close(weights, (q @ k.T * geometry.scale).softmax(-1), atol=1e-5, rtol=1e-4)


def test_the_gru_records_its_one_unscaled_full_attention() -> None:
    gru = run(ModelAsk("seq2seq-dates", "22 Nov 2026")).trace
    geometry = gru.geometry_of(0)
    assert geometry is not None and (geometry.mask, geometry.window, geometry.scale) == ("full", None, 1.0)
    assert geometry.positional.kind == "none"
