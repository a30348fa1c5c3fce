"""Where `stages --out` writes: every place that cannot take the output is one line before anything is computed,
and a write that fails half way (a full disk) leaves no half-written file and keeps what was there."""

from __future__ import annotations

import csv
import io
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from attn_tui.attention.engine import compute
from attn_tui.io.export import stage_to_csv
from tests.conftest import sentence
from tests.hostile.helpers import MEMORY_CEILING, TIME_LIMIT, attn_tui

pytestmark = pytest.mark.slow

TEXT = ["stages", "--text", "나는 학교에 간다"]


@pytest.fixture
def places(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "file").write_text("kept\n")
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "fifo")
    return {"file": tmp_path / "file", "folder": tmp_path / "folder", "fifo": tmp_path / "fifo"}


@pytest.mark.parametrize("fmt,target,fragment", [
    ("json", "folder", "it is a directory"),
    ("npz", "fifo", "FIFO"),
    ("json", "/dev/full", "character device"),
    ("npz", "file/child.npz", "Not a directory"),
    ("json", "no/such/out.json", "no directory"),
    ("csv", "file", "it is a file, and several files need a folder"),  # every stage as csv: a folder
    ("csv", "fifo", "several files need a folder"),
    ("json", "", "--out is empty"),
    ("csv", "", "--out is empty"),
    ("npz", "-", "--format npz writes a binary file"),
])
def test_a_place_that_cannot_take_the_output_is_one_line(fmt: str, target: str, fragment: str,
                                                         places: dict[str, Path], tmp_path: Path) -> None:
    path = str(places.get(target, tmp_path / target)) if target not in ("", "-", "/dev/full") else target
    outcome = attn_tui(*TEXT, "--format", fmt, "--out", path, cwd=tmp_path)
    assert outcome.refused(fragment), outcome
    assert places["file"].read_text() == "kept\n"


def test_dash_prints_and_a_folder_takes_one_csv_stage(places: dict[str, Path], tmp_path: Path) -> None:
    printed = attn_tui(*TEXT, "--format", "json", "--stage", "weights", "--out", "-", cwd=tmp_path)
    assert printed.code == 0 and json.loads(printed.out)["stages"][0]["name"] == "weights"
    into = attn_tui(*TEXT, "--format", "csv", "--stage", "weights", "--out", str(places["folder"]), cwd=tmp_path)
    assert into.code == 0 and (places["folder"] / "weights.csv").read_text().startswith("query,")
    assert not [p for p in tmp_path.rglob("*.part")]


def _full_disk(limit: int):
    """A disk that fills after `limit` bytes of any one file (RLIMIT_FSIZE: Python ignores SIGXFSZ, so writes fail)."""
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


@pytest.mark.parametrize("fmt,name", [("json", "out.json"), ("npz", "out.npz"), ("csv", "folder")])
def test_a_disk_that_fills_leaves_no_half_written_file(fmt: str, name: str, places: dict[str, Path],
                                                       tmp_path: Path) -> None:
    target = tmp_path / name
    if fmt != "csv":
        target.write_text("the previous export\n")
    words = " ".join(f"w{i}" for i in range(200))
    result = subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--text", words, "--format", fmt, "--out",
                             str(target)], capture_output=True, text=True, timeout=TIME_LIMIT,
                            preexec_fn=_full_disk(20_000), cwd=tmp_path)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "cannot write the output to" in lines[0] and "File too large" in lines[0]
    if fmt == "csv":
        assert not list(target.iterdir())  # the first file failed: nothing half written is left
    else:
        assert target.read_text() == "the previous export\n"  # what was there before, not a truncated file
    assert not [p for p in tmp_path.rglob("*.part")]


def test_a_token_a_spreadsheet_would_run_is_written_as_text() -> None:
    text = stage_to_csv(compute(sentence('=HYPERLINK("x") @SUM(1) plain -')).stage("weights"))
    header = next(csv.reader(io.StringIO(text)))
    assert header == ["query", "'=HYPERLINK(\"x\")", "'@SUM(1)", "plain", "'-"]
