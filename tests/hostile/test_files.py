"""Files a user points at: devices, FIFOs, directories, secrets, huge and binary files each end at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attn_tui.errors import InputError
from attn_tui.io.files import MAX_FILE_BYTES, read_text, writable_file
from tests.hostile.helpers import attn_tui

pytestmark = pytest.mark.slow

SECRET = "root:$6$hunter2hunter2$abcdefghijk:19000:0:99999:7:::"


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "fifo"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("option", ["--x", "--mask-file"])
@pytest.mark.parametrize("target,fragment", [
    ("/dev/zero", "character device"),
    ("/dev/null", "character device"),
    ("DIR", "a directory"),
    ("FIFO", "FIFO"),
    ("/proc/self/environ", "binary"),
])
def test_special_files_end_at_once(option: str, target: str, fragment: str, tmp_path: Path, fifo: Path) -> None:
    path = {"DIR": str(tmp_path), "FIFO": str(fifo)}.get(target, target)
    argv = ["stages", "--x", path] if option == "--x" else ["stages", "--text", "a b", "--mask-file", path]
    outcome = attn_tui(*argv)
    assert outcome.refused(fragment), outcome


def test_standard_input_that_never_ends_is_capped() -> None:
    outcome = attn_tui("stages", "--x", "-", stdin=b"1 " * (MAX_FILE_BYTES // 2 + 10))
    assert outcome.refused("larger than 16 MB"), outcome


def test_a_secret_is_named_never_echoed(tmp_path: Path) -> None:
    (tmp_path / "shadow").write_text(SECRET + "\n1 2 3\n")
    (tmp_path / "numbers-then-secret").write_text("1 2 3\n4 " + SECRET)
    for name in ("shadow", "numbers-then-secret"):
        outcome = attn_tui("stages", "--x", str(tmp_path / name))
        assert outcome.refused(name), outcome
        assert "hunter2" not in outcome.err and "$6$" not in outcome.err


def test_checkpoint_output_must_be_a_file(tmp_path: Path, fifo: Path) -> None:
    for target, fragment in ((fifo, "FIFO"), (tmp_path, "a directory"), (tmp_path / "no" / "x.pt", "no directory")):
        outcome = attn_tui("train-seq2seq", "--out", str(target), "--epochs", "1", "--steps", "1")
        assert outcome.refused(fragment), outcome


def test_reader_caps_size_and_decoding(tmp_path: Path) -> None:
    big = tmp_path / "big"
    big.write_bytes(b"1 " * (MAX_FILE_BYTES // 2 + 1))
    with pytest.raises(InputError, match="larger than 16 MB"):
        read_text(big, "X")
    latin = tmp_path / "latin"
    latin.write_bytes("caf\xe9 1 2".encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        read_text(latin, "X")
    assert writable_file(tmp_path / "new.pt", "the checkpoint") == tmp_path / "new.pt"
