"""The recorder is a Source: `attn-tui trace`, `attn_tui.record()` and the app reach the user's code through the one
door (`sources.run`), with a RecordAsk — a script to run, or a block recorded already."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

import attn_tui
from attn_tui.ask.settings import RecordAsk
from attn_tui.sources import door, run
from attn_tui.sources.recorder.source import RecorderSource
from attn_tui.sources.registry import source_for
from tests.cli.test_cli import run_cli
from tests.sources.recorder import modules as m


@pytest.fixture
def door_runs(monkeypatch: pytest.MonkeyPatch) -> list[RecordAsk]:
    """Every ask that goes through the door while the test runs."""
    asked: list = []
    real = door.run

    def counted(ask, *args, **kwargs):
        asked.append(ask)
        return real(ask, *args, **kwargs)

    monkeypatch.setattr(door, "run", counted)
    return asked


def test_the_registry_hands_a_record_ask_to_the_recorder() -> None:
    assert isinstance(source_for(RecordAsk("mine.py")), RecorderSource)
    ask = RecordAsk("mine.py")
    assert ask.kind == "recorded" and ask.on_device("cpu") is ask and ask.changed({"mask": "causal"}) is ask
    assert ask.model is None and ask.request is None
    assert (ask.file_name, RecordAsk("/a/b/mine.py").file_name, RecordAsk(sample="luong").file_name) == (
        "mine.py", "mine.py", "luong.py")


def test_a_recorded_block_goes_through_the_door_and_matches_torch(door_runs: list) -> None:
    torch.manual_seed(0)
    q, k, v = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 4)
    with attn_tui.record(tokens="나는 학교에 간다") as rec:
        F.softmax(q @ k.T / 2.0, dim=-1) @ v
    trace = rec.trace
    assert [a.kind for a in door_runs] == ["recorded"] and door_runs[0].held is not None
    torch.testing.assert_close(trace.tensor("weights"), F.softmax(q @ k.T / 2.0, dim=-1))
    assert trace.query_tokens == ("나는", "학교에", "간다")


def test_a_held_trace_comes_back_as_the_very_same_object() -> None:
    torch.manual_seed(1)
    with attn_tui.record() as rec:
        m.MultiHeadAttention(8, 2)(torch.randn(1, 3, 8))
    trace = rec.trace
    shown = run(RecordAsk().keeping(trace))
    assert shown.trace is trace and shown.ask.kind == "recorded" and shown.stats is None and shown.notice is None
    assert run(RecordAsk().keeping(trace)).trace is trace  # asked again (undo): never recomputed


@pytest.mark.slow
def test_trace_on_the_command_line_runs_the_script_through_the_door(capsys, tmp_path: Path, door_runs: list) -> None:
    script = tmp_path / "mine.py"
    script.write_text("import torch, sys\nq = torch.eye(3)\nw = torch.softmax(q @ q.T * float(sys.argv[1]), dim=-1)\n"
                      "print(w @ q)\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", "--max-calls", "3", str(script), "2")
    assert code == 0, err
    first = door_runs[0]
    assert (first.script, first.args, first.max_calls, first.quiet_stdout, first.held) == (str(script), ("2",), 3,
                                                                                          True, None)
    assert door_runs[1].held is not None  # what is printed is the trace the first run recorded, not a second run
    weights = next(s for s in json.loads(out)["stages"] if s["name"] == "weights")
    torch.testing.assert_close(torch.tensor(weights["data"]), torch.softmax(torch.eye(3) * 2.0, dim=-1))
    assert "tensor(" in err  # the file's own output went to stderr: stdout holds the JSON
