"""`attn-tui trace` on files it was never shown: learners' modules, and files that fight back.

A learner's file runs and what it computed is printed; a hostile one (it raises, exits,
recurses forever, reads stdin, prints a flood, trains in between, calls attention ten
thousand times) ends with exit 2 and one line, or with a trace, in bounded time.
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

ROOT = Path(__file__).resolve().parents[2]

LEARNER = textwrap.dedent('''
    import math, sys
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    sys.path.insert(0, {root!r})
    from tests.sources.recorder.more_modules import CausalSelfAttention, LuongScores

    torch.manual_seed(0)
    gpt = CausalSelfAttention(8, 2, 6)
    luong = LuongScores("general", 4)
    for i in range(30):
        print("warming up", i)
    y, att = gpt(torch.randn(1, 4, 8))
    context, weights = luong(torch.randn(1, 1, 4), torch.randn(5, 1, 4))
    torch.save({{"y": y, "att": att, "context": context, "weights": weights}}, sys.argv[1])
''')


def stages(doc: dict, module: str) -> dict:
    return {(s["name"], s.get("head"), s.get("step")): s for s in doc["stages"] if s.get("module") == module}


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_a_learners_file_with_two_modules_and_prints(capsys, tmp_path: Path) -> None:
    script = tmp_path / "learner.py"
    script.write_text(LEARNER.format(root=str(ROOT)), encoding="utf-8")
    saved = tmp_path / "saved.pt"
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(script), str(saved))
    assert code == 0, err
    assert "warming up 29" in err  # the file's prints went to stderr: stdout is the JSON alone
    doc = json.loads(out)
    assert doc["modules"] == ["CausalSelfAttention", "LuongScores"]
    expected = torch.load(saved)
    gpt, luong = stages(doc, "CausalSelfAttention"), stages(doc, "LuongScores")
    for h in range(2):
        got = torch.tensor(gpt[("weights", h, None)]["data"], dtype=torch.float64)
        assert torch.equal(got, expected["att"][0, h].double())
    assert torch.equal(torch.tensor(gpt[("projected", None, None)]["data"], dtype=torch.float64),
                       expected["y"][0].double())
    assert torch.equal(torch.tensor(luong[("output", None, None)]["data"], dtype=torch.float64),
                       expected["context"][0].double())
    assert gpt[("qkv_proj", None, None)]["origin"].startswith("more_modules.py:")


HOSTILE = {
    "exits_with_a_message.py": ("import sys\nsys.exit('no data folder\\ngiven')\n",
                                "exits_with_a_message.py exited: no data folder given"),
    "recurses.py": ("import torch\ndef f(x):\n    return f(torch.softmax(x, -1))\nf(torch.randn(2, 2))\n",
                    "recurses.py:3: RecursionError"),
    "null_byte.py": ("import torch\x00\n", "null_byte.py: SyntaxError"),
    "only_a_number.py": ("import torch\nprint(torch.softmax(torch.tensor(1.0), 0))\n",
                         "only_a_number.py ran, but no attention was recorded"),
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
@pytest.mark.slow  # a child process that imports torch: seconds each
def test_hostile_files_end_with_one_line(capsys, tmp_path: Path, name: str) -> None:
    text, expected = HOSTILE[name]
    (tmp_path / name).write_text(text, encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", str(tmp_path / name))
    ours = [line for line in err.splitlines() if line.startswith("attn-tui")]
    assert code == 2 and len(ours) == 1 and "Traceback" not in err, err
    assert expected in ours[0], ours[0]
    if name == "recurses.py":  # its softmaxes ran before it failed: what they computed is printed, the failure said
        document = json.loads(out)
        assert document["settings"]["calls"][0] > 900 and document["settings"]["stopped"].startswith(expected)
        assert any(expected in warning for warning in document["warnings"])
    else:
        assert out == ""


@pytest.mark.slow  # a child process that imports torch: seconds each
def test_a_file_that_trains_in_between_keeps_every_call(capsys, tmp_path: Path) -> None:
    """`p -= lr * p.grad` under no_grad is a training step: every call is shown, with its own weights."""
    script = tmp_path / "trains.py"
    script.write_text(textwrap.dedent('''
        import torch, torch.nn as nn
        torch.manual_seed(0)
        lin = nn.Linear(4, 4)
        x = torch.randn(1, 3, 4)
        for _ in range(3):
            q = lin(x)
            w = torch.softmax(q @ q.transpose(1, 2), -1)
            (w @ q).pow(2).sum().backward()
            with torch.no_grad():
                for p in lin.parameters():
                    p -= 0.1 * p.grad
                    p.grad = None
    '''), encoding="utf-8")
    code, out, err = run_cli(capsys, "trace", "--format", "json", "--params", str(script))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["warnings"] == [] and max(s["step"] for s in doc["stages"]) == 2
    assert {"weight", "weight@2", "weight@3"} <= set(doc["params"])


@pytest.mark.slow
def test_ten_thousand_calls_keep_the_last_ones(capsys, tmp_path: Path) -> None:
    script = tmp_path / "loop.py"
    script.write_text(textwrap.dedent('''
        import torch
        torch.set_num_threads(1)
        q = torch.randn(3, 4)
        for i in range(10000):
            w = torch.softmax(q @ q.T / 2, dim=-1)
            o = w @ q
    '''), encoding="utf-8")
    threads = torch.get_num_threads()  # the script sets one thread (its calls are tiny): put it back after
    try:
        code, out, err = run_cli(capsys, "trace", "--format", "json", "--max-calls", "8", str(script))
    finally:
        torch.set_num_threads(threads)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["settings"]["calls"] == [10000] and doc["settings"]["shown"] == [8]
    assert any("ran 10000 times; the last 8 calls are shown" in w for w in doc["warnings"])


@pytest.mark.slow
@pytest.mark.parametrize(("text", "expected"), [
    ("import sys, torch\ndata = sys.stdin.read()\nq = torch.randn(2, 3)\nw = torch.softmax(q @ q.T, -1)\n", None),
    ("name = input('your name: ')\n", "hostile.py:1: EOFError"),
    ("import torch\ndef f(x):\n    return f(torch.softmax(x, -1))\nf(torch.randn(2, 2))\n",
     "hostile.py:3: RecursionError"),
])
def test_stdin_and_deep_recursion_in_a_real_process(tmp_path: Path, text: str, expected: str | None) -> None:
    script = tmp_path / "hostile.py"
    script.write_text(text, encoding="utf-8")
    result = subprocess.run([sys.executable, "-m", "attn_tui", "trace", "--format", "json", str(script)],
                            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=limit(300),
                            env={"ATTN_TUI_LANG": "en", "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"})
    if expected is None:
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["tokens"]["query"] == ["q0", "q1"]
        return
    assert result.returncode == 2 and "Traceback" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("attn-tui: error: ") and expected in last, result.stderr
