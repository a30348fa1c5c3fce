"""Qwen3-Next's value heads beyond num_attention_heads: a linear layer has its own head count.

A tiny model with twice as many linear value heads as attention heads: `--head` past the attention heads reaches
a linear layer's head (its states equal the Gated DeltaNet recurrence in float64 loops, its output what
transformers' module hands its norm), and is refused in one line on a full-attention layer; the API the same.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import torch

transformers = pytest.importorskip("transformers")

from attn_tui import api  # noqa: E402
from attn_tui.cli import main  # noqa: E402
from attn_tui.errors import ConfigError  # noqa: E402
from tests.attention.test_linear import paper_reference  # noqa: E402
from tests.sources.test_qwen3_next import _captured  # noqa: E402
from tests.sources.tiny_models import SMALL, TEXT, tiny  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.models]

WIDE = dict(SMALL, num_hidden_layers=2, num_attention_heads=2, layer_types=["linear_attention", "full_attention"],
            num_key_value_heads=1, head_dim=8, linear_num_value_heads=4, linear_num_key_heads=2,
            linear_key_head_dim=4, linear_value_head_dim=4, linear_conv_kernel_dim=2, num_experts=0)


@pytest.fixture(scope="module")
def wide(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny(tmp_path_factory.mktemp("qwen3_next_heads"), "qwen3_next", WIDE, name="wide")


def _stages(path: Path, capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, list[dict]]:
    assert main(["stages", "--model", str(path), "--text", TEXT, "--format", "json", *args]) == 0
    found: dict[str, list[dict]] = {}
    for stage in json.loads(capsys.readouterr().out)["stages"]:
        found.setdefault(stage["name"], []).append(stage)
    return found


def test_a_head_past_the_attention_heads_on_a_linear_layer_is_its_own_recurrence(wide: Path, capsys) -> None:
    core = _captured(wide)["core"][0].view(-1, 4, 4)  # (N, H_v, d_v): what the module hands its norm
    for head in (2, 3):  # past the 2 attention heads
        found = _stages(wide, capsys, "--layer", "0", "--head", str(head))
        assert {s["head"] for stages in found.values() for s in stages} == {head}
        q, k, v = (torch.tensor(found[n][0]["data"], dtype=torch.float64) for n in ("query", "key", "value"))
        q_hat = q / (q.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt() / q.shape[1] ** 0.5
        k_hat = k / (k.pow(2).sum(-1, keepdim=True) + 1e-6).sqrt()
        alpha = torch.tensor(found["decay"][0]["data"], dtype=torch.float64)[:, 0]
        beta = torch.tensor(found["beta"][0]["data"], dtype=torch.float64)[:, 0]
        states, out = paper_reference(q_hat, k_hat, v, alpha, beta)
        stepped = sorted(found["state"], key=lambda s: s["step"])
        assert len(stepped) == len(states)
        for stage, state in zip(stepped, states, strict=True):
            assert (torch.tensor(stage["data"], dtype=torch.float64) - state).abs().max() <= 1e-5, stage["step"]
        output = torch.tensor(found["output"][0]["data"], dtype=torch.float64)
        assert (output - out).abs().max() <= 1e-5
        assert (output - core[:, head].double()).abs().max() <= 1e-5


def test_the_same_head_on_a_full_attention_layer_is_refused_in_one_line(wide: Path, capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--model", str(wide), "--text", TEXT, "--layer", "1", "--head", "2"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "layer 1" in err and "0…1" in err, err
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(SystemExit) as exit_:  # and past the linear layer's own heads
        main(["stages", "--model", str(wide), "--text", TEXT, "--layer", "0", "--head", "4"])
    assert exit_.value.code == 2 and "0…3" in capsys.readouterr().err


def test_the_api_reaches_the_value_heads_and_the_trace_says_each_layers_count(wide: Path) -> None:
    trace = api.compute(model=str(wide), text=TEXT, layer=0, head=3)
    assert (trace.heads, trace.heads_at(0), trace.heads_at(1)) == (2, 4, 2)
    assert trace.meta.layer_heads == (4, 2)
    core = _captured(wide)["core"][0].view(-1, 4, 4)
    assert (trace.tensor("output", 0, 3) - core[:, 3]).abs().max() <= 1e-5
    with pytest.raises(ConfigError, match="0…1"):
        api.compute(model=str(wide), text=TEXT, layer=1, head=3)


def test_the_grid_shows_each_layers_own_heads_and_the_rollout_each_layers_mean(wide: Path, capsys) -> None:
    from rich.console import Console

    from attn_tui.ask.settings import ModelAsk
    from attn_tui.present.model_view import summary_of
    from attn_tui.render.model_grid import model_grid_table
    from attn_tui.sources import run
    from tests.sources.tiny_models import reference

    shown = run(ModelAsk(str(wide), TEXT))
    summary = summary_of(shown)
    assert summary is not None and (summary.layers, summary.heads) == (2, 4)
    assert [(c.layer, c.head) for c in summary.cells] == [(0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (1, 1)]
    assert summary.cell(1, 2) is None and summary.cell(1, 3) is None
    trace = shown.trace
    for head in range(4):  # the linear layer's cells: the matrix its recurrence equals
        assert torch.equal(torch.as_tensor(summary.cell(0, head).grid.values), trace.tensor("implied", 0, head))
    full = reference(wide)[-1].double()  # (2, N, N): transformers' own weights of the full-attention layer
    for head in range(2):
        assert (torch.as_tensor(summary.cell(1, head).grid.values).double() - full[head]).abs().max() <= 1e-5
    # the rollout: the linear layer passes as the residual path, the full layer mixes the mean of its own 2 heads
    n = full.shape[-1]
    eye = torch.eye(n, dtype=torch.float64)
    mixed = 0.5 * full.mean(0) + 0.5 * eye
    expected = mixed / mixed.sum(-1, keepdim=True)
    assert (shown.stats.rollout.double() - expected).abs().max() <= 1e-5
    console = Console(width=300, record=True, file=io.StringIO())
    console.print(model_grid_table(summary.cells, summary.layers, summary.heads, (0, 3)))
    text = console.export_text()
    assert "h3" in text and "L1" in text
    assert summary_of(shown) is summary and len(shown.stats.stats) == 6  # only the heads each layer has
    assert main(["heads", "--model", str(wide), "--text", TEXT, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["layer_heads"] == [4, 2] and len(document["stats"]) == 6


def test_a_generation_writes_every_value_head_and_the_full_layers_own(wide: Path, capsys) -> None:
    assert main(["stages", "--model", str(wide), "--text", "a cat", "--generate", "2", "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    heads = {(s["layer"], s["head"]) for s in document["stages"] if s["head"] is not None}
    assert {(0, h) for h in range(4)} <= heads and {(1, 0), (1, 1)} <= heads
    assert not {(1, 2), (1, 3)} & heads
    assert main(["stages", "--model", str(wide), "--text", "a cat", "--generate", "2", "--layer", "0", "--head", "3",
                 "--stage", "state", "--format", "json"]) == 0
    steps = {s["step"] for s in json.loads(capsys.readouterr().out)["stages"]}
    assert {0, 1} <= steps
    from attn_tui.ask.settings import ModelAsk
    from attn_tui.sources import run

    shown = run(ModelAsk(str(wide), "a cat", generate=2))  # the grid of a generation: each layer's own heads
    assert shown.stats is not None and len(shown.stats.stats) == 6 and shown.stats.weights.shape[:2] == (2, 4)
