"""`attn-tui trace FILE.py [args…]`: the user's file runs with its arguments; what it computed is printed or shown.

Bad inputs end with exit 2 and one line naming the user's file, line and exception.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from tests.cli.test_cli import run_cli
from tests.limits import limit

SCRIPT = textwrap.dedent('''
    import sys
    import torch
    import torch.nn.functional as F

    torch.manual_seed(int(sys.argv[1]))
    q = torch.randn(3, 4)
    k = torch.randn(int(sys.argv[2]), 4)
    scores = q @ k.T / 2.0
    weights = F.softmax(scores, dim=-1)
    output = weights @ k
    print("computed", output.shape)
    torch.save({"weights": weights, "output": output}, sys.argv[3])
''')


@pytest.mark.slow
def test_trace_runs_the_file_with_its_arguments_and_prints_json(capsys, tmp_path: Path) -> None:
    script = tmp_path / "mine.py"
    script.write_text(SCRIPT, encoding="utf-8")
    saved = tmp_path / "saved.pt"
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(script), "7", "5", str(saved))
    assert code == 0, err
    doc = json.loads(out)  # the script's own print went to stderr, so stdout is the JSON alone
    assert "computed" in err
    assert doc["kind"] == "recorded" and doc["script"] == "mine.py" and doc["modules"] == ["script"]
    stages = {s["name"]: s for s in doc["stages"]}
    assert list(stages) == ["query", "key", "scores", "scaled", "weights", "output"]
    expected = torch.load(saved)
    assert torch.equal(torch.tensor(stages["weights"]["data"], dtype=torch.float64),
                       expected["weights"].double())
    assert torch.equal(torch.tensor(stages["output"]["data"], dtype=torch.float64), expected["output"].double())
    assert stages["scores"]["origin"] == "mine.py:9: scores = q @ k.T / 2.0"
    assert stages["weights"]["origin"] == "mine.py:10: weights = F.softmax(scores, dim=-1)"


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_trace_table_and_stage_filter(capsys, tmp_path: Path) -> None:
    script = tmp_path / "mine.py"
    script.write_text(SCRIPT, encoding="utf-8")
    code, out, _ = run_cli(capsys, "trace", "--format", "table", "--stage", "weights", str(script), "1", "2",
                           str(tmp_path / "x.pt"))
    assert code == 0
    assert "weights" in out and "scores" not in out.split("weights", 1)[1].split("\n")[0]


@pytest.mark.parametrize("sample", ["self_attention", "bahdanau_decoder"])
@pytest.mark.slow  # a child process that imports torch: seconds each
def test_the_sample_scripts_trace(capsys, sample: str) -> None:
    code, out, err = run_cli(capsys, "trace", "--sample", sample, "--format", "json")
    assert code == 0, err
    doc = json.loads(out)
    names = list(dict.fromkeys(s["name"] for s in doc["stages"]))
    assert "weights" in names and "output" in names
    assert all(s["origin"] and s["origin"].startswith(f"{sample}.py:") for s in doc["stages"])
    if sample == "bahdanau_decoder":
        assert names == ["query", "query_proj", "key", "key_proj", "energy", "scores", "weights", "output"]
        assert max(s["step"] for s in doc["stages"]) == 3  # one step per decoded character
        assert doc["tokens"]["key"] == ["나는", "학교에", "간다", "<eos>"]
    else:
        assert doc["tokens"]["query"] == ["나는", "학교에", "간다"]
        masked = next(s for s in doc["stages"] if s["name"] == "masked")
        assert masked["data"][0][1:] == ["-inf", "-inf"]


def test_samples_lists_the_scripts(capsys) -> None:
    code, out, _ = run_cli(capsys, "samples")
    assert code == 0 and "attn-tui trace --sample self_attention" in out


BAD = {
    "raises.py": ("import torch\ndef f():\n    raise ValueError('the shapes do not fit\\nat all')\nf()\n",
                  "raises.py:3: ValueError: the shapes do not fit at all"),
    "quiet.py": ("import torch\nprint(torch.ones(2) + 1)\n", "quiet.py ran, but no attention was recorded"),
    "broken.py": ("def f(:\n    pass\n", "broken.py:1: SyntaxError"),
    "exits.py": ("import sys\nsys.exit(3)\n", "exits.py exited with status 3"),
    "hard_exit.py": ("import os\nos._exit(3)\n", "hard_exit.py exited with status 3"),  # not attn-tui's own exit
    "closes.py": ("import sys\nsys.stdout.close()\nprint('x')\n", "closes.py:3: ValueError: I/O operation on closed"),
}


@pytest.mark.parametrize("name", sorted(BAD))
@pytest.mark.slow  # a child process that imports torch: seconds each
def test_bad_scripts_end_with_one_line(capsys, tmp_path: Path, name: str) -> None:
    text, expected = BAD[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(tmp_path / name))
    assert code == 2 and out == ""
    ours = [line for line in err.splitlines() if line.startswith("attn-tui")]  # the script's prints go to stderr
    assert len(ours) == 1 and expected in ours[0] and "Traceback" not in err, err


@pytest.mark.parametrize("argv", [["trace", "missing.py"], ["trace"], ["trace", "--sample", "nope"],
                                  ["trace", "--sample", "self_attention", "other.py"],
                                  ["trace", "--stage", "weights", "x.py"]])
def test_bad_invocations_end_with_one_line(capsys, argv: list[str]) -> None:
    code, _, err = run_cli(capsys, *argv)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_attention_recorded_before_os_exit_is_kept(capsys, tmp_path: Path) -> None:
    (tmp_path / "leaves.py").write_text("import os, torch\nimport torch.nn.functional as F\nq = torch.randn(1, 3, 4)\n"
                                        "F.scaled_dot_product_attention(q, q, q)\nos._exit(0)\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(tmp_path / "leaves.py"))
    assert code == 0, err
    assert "weights" in {s["name"] for s in json.loads(out)["stages"]}


@pytest.mark.slow
@pytest.mark.parametrize("stream", ["stdout", "stderr"])
def test_a_script_closing_its_stream_leaves_attn_tui_its_own(tmp_path: Path, stream: str) -> None:
    (tmp_path / "closes.py").write_text(f"import sys, torch\nimport torch.nn.functional as F\nsys.{stream}.close()\n"
                                        "q = torch.randn(1, 3, 4)\nF.scaled_dot_product_attention(q, q, q)\n"
                                        "print('after', file=sys.stderr)\n", encoding="utf-8")
    command = [sys.executable, "-m", "attn_tui", "trace", "--format", "json", str(tmp_path / "closes.py")]
    result = subprocess.run(command,
                            capture_output=True, text=True, timeout=limit(120), env={"ATTN_TUI_LANG": "en",
                                                                                "PATH": "/usr/bin:/bin"})
    if stream == "stdout":
        assert result.returncode == 0 and json.loads(result.stdout)["stages"], result.stderr[-500:]
    else:
        assert result.returncode == 2 and "Fatal" not in result.stderr
        assert result.stderr.strip() == "attn-tui: error: closes.py:6: ValueError: I/O operation on closed file."


@pytest.mark.slow
def test_a_raising_script_in_a_real_process_prints_no_traceback(tmp_path: Path) -> None:
    (tmp_path / "boom.py").write_text("import torch\nraise RuntimeError('boom')\n", encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "attn_tui", "trace", str(tmp_path / "boom.py")],
                            capture_output=True, text=True, timeout=limit(120), env={"ATTN_TUI_LANG": "en",
                                                                                "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2
    assert result.stderr.strip() == "attn-tui: error: boom.py:2: RuntimeError: boom"


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_a_large_json_says_its_size_and_how_to_write_less(capsys, tmp_path: Path, monkeypatch) -> None:
    from attn_tui.cli import commands

    (tmp_path / "small.py").write_text("import torch\nimport torch.nn.functional as F\nq = torch.randn(1, 2, 6, 4)\n"
                                       "F.scaled_dot_product_attention(q, q, q)\n", encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(tmp_path / "small.py"))
    assert code == 0 and "note:" not in err
    monkeypatch.setattr(commands, "LARGE_OUTPUT", 1000)  # this little file's JSON counts as large
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(tmp_path / "small.py"))
    assert code == 0 and json.loads(out)["stages"]
    notes = [line for line in err.splitlines() if line.startswith("note: this JSON is about")]
    assert len(notes) == 1 and "--stage NAME and --head N write less" in notes[0]
