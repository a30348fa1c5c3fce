"""A full disk, an interrupt or a signal mid-write leaves the old file whole and no partial file: exports, the
session, the SVG screenshot and `train-seq2seq --out` all write through io/files.write_atomic.

A real full disk is a 64 KiB tmpfs where the tests may mount one (root); elsewhere those
tests skip, and the same failure is raised by hand (OSError ENOSPC) or by RLIMIT_FSIZE.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from attn_tui.io.files import partial, remove_partials, write_atomic, write_text_atomic
from attn_tui.io.session import Session, save
from tests.hostile.helpers import MEMORY_CEILING, TIME_LIMIT
from tests.limits import limit

OLD = "the old file\n"


def _leftovers(folder: Path) -> list[Path]:
    return [p for p in folder.iterdir() if p.name.endswith(".part")]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB file system of its own, mounted for the test (skipped where mounting is not allowed)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip("a small tmpfs cannot be mounted here (needs root): " + done.stderr.decode(errors="replace"))
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path, leave: int = 0) -> None:
    """Fill `disk` until about `leave` bytes are free."""
    with (disk / "filler").open("wb") as out:
        try:
            while os.statvfs(disk).f_bavail * os.statvfs(disk).f_frsize > leave:
                out.write(b"\0" * 4096)
                out.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC


def test_a_write_that_fails_halfway_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text(OLD)

    def half_then(error: BaseException):
        def write(partial: Path) -> None:
            partial.write_text("{\"half\": ")
            raise error
        return write

    for error in (OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt(), SystemExit(143)):
        with pytest.raises(type(error)):
            write_atomic(target, half_then(error))
        assert target.read_text() == OLD and not _leftovers(tmp_path)


def test_a_signal_while_another_thread_writes_leaves_no_partial_file(tmp_path: Path) -> None:
    target = tmp_path / "export.npz"
    target.write_text(OLD)
    writing, release, failures = threading.Event(), threading.Event(), []

    def slow(partial: Path) -> None:
        partial.write_text("half")
        writing.set()
        release.wait(10)

    def worker() -> None:
        try:
            write_atomic(target, slow)
        except OSError as exc:
            failures.append(exc)

    thread = threading.Thread(target=worker)
    thread.start()
    assert writing.wait(limit(10))
    partial = _leftovers(tmp_path)
    assert remove_partials() == partial and not _leftovers(tmp_path)  # what the app's signal handler does
    release.set()
    thread.join(10)
    assert target.read_text() == OLD and failures and not _leftovers(tmp_path)


def test_the_session_on_a_full_disk_keeps_the_one_saved_before(small_disk: Path) -> None:
    path = small_disk / "session.json"
    save(Session(sentence="나는 학교에 간다"), path)
    before = path.read_text(encoding="utf-8")
    _fill(small_disk)
    with pytest.raises(OSError) as caught:
        save(Session(sentence="가" * 20_000), path)
    assert caught.value.errno == errno.ENOSPC
    assert path.read_text(encoding="utf-8") == before and not _leftovers(small_disk)


def test_text_on_a_full_disk_keeps_the_old_file(small_disk: Path) -> None:
    target = small_disk / "screen.svg"
    target.write_text(OLD)
    _fill(small_disk, leave=4096)
    with pytest.raises(OSError) as caught:
        write_text_atomic(target, "<svg>" + "x" * 100_000 + "</svg>")
    assert caught.value.errno == errno.ENOSPC
    assert target.read_text() == OLD and not _leftovers(small_disk)


def _train(out: Path, preexec=None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "attn_tui", "train-seq2seq", "--epochs", "1", "--steps", "1", "--out",
                           str(out)], capture_output=True, text=True, timeout=TIME_LIMIT * 3, preexec_fn=preexec)


def _one_line(result: subprocess.CompletedProcess[str], fragment: str) -> None:
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "cannot write the checkpoint to" in lines[0] and fragment in lines[0], lines


@pytest.mark.slow
def test_train_seq2seq_on_a_full_disk_keeps_the_old_checkpoint(small_disk: Path) -> None:
    out = small_disk / "dates.pt"
    out.write_bytes(b"the old checkpoint")
    _fill(small_disk, leave=8192)
    _one_line(_train(out), "No space left on device")
    assert out.read_bytes() == b"the old checkpoint" and not _leftovers(small_disk)


@pytest.mark.slow
def test_train_seq2seq_over_the_file_size_limit_keeps_the_old_checkpoint(tmp_path: Path) -> None:
    def limited() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))
        resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))

    out = tmp_path / "dates.pt"
    out.write_bytes(b"the old checkpoint")
    _one_line(_train(out, limited), "File too large")
    assert out.read_bytes() == b"the old checkpoint" and not _leftovers(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_mid_export_leaves_the_old_file_and_no_partial_one(signum: int, tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    words = " ".join(f"w{i}" for i in range(600))  # about 30 MB of JSON: seconds of writing
    for _ in range(3):  # a test starved of the CPU may see the partial file only as the export ends: then again
        target.write_text(OLD)
        child = subprocess.Popen([sys.executable, "-m", "attn_tui", "stages", "--text", words, "--format", "json",
                                  "--out", str(target)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
        deadline = time.monotonic() + TIME_LIMIT * 2
        while not _leftovers(tmp_path) and child.poll() is None:
            assert time.monotonic() < deadline, "the export never began"
            time.sleep(0.01)
        child.send_signal(signum)
        _, err = child.communicate(timeout=TIME_LIMIT)
        if not (child.returncode == 0 and target.read_text() != OLD):  # the signal came while it wrote
            break
    else:
        pytest.fail("each export ended before the signal reached it")
    assert child.returncode == 128 + signum, err
    assert b"Traceback" not in err
    assert target.read_text() == OLD and not _leftovers(tmp_path)


def test_the_session_is_for_its_owner_only(tmp_path: Path) -> None:
    path = tmp_path / "state" / "session.json"
    save(Session(sentence="비밀 문장"), path)
    save(Session(sentence="다시 쓴 문장"), path)  # replaced, not rewritten in place: the mode is the new file's
    assert path.stat().st_mode & 0o777 == 0o600 and not _leftovers(path.parent)


def test_a_scratch_folder_being_written_is_removed_too(tmp_path: Path) -> None:
    scratch = tmp_path / ".attn-tui-x.part"  # where an .npz export keeps its arrays until they are zipped
    (scratch / "inner").mkdir(parents=True)
    (scratch / "inner" / "stage.npy").write_bytes(b"\0" * 100)
    with partial(scratch):
        assert remove_partials() == [scratch]
    assert not scratch.exists() and remove_partials() == []


def _generation_export(tmp_path: Path, out: Path, preexec=None) -> subprocess.CompletedProcess[str]:
    """`stages --generate` of a tiny Llama written as JSON to `out`: some 400 KB of every step's stages."""
    from tests.sources.tiny_models import CONFIGS, tiny

    model = tiny(tmp_path, "llama", CONFIGS["llama"])
    return subprocess.run([sys.executable, "-m", "attn_tui", "stages", "--model", str(model), "--text", "the cat sat",
                           "--generate", "3", "--format", "json", "--out", str(out)], capture_output=True, text=True,
                          timeout=TIME_LIMIT * 3, preexec_fn=preexec)


@pytest.mark.slow
@pytest.mark.models
def test_a_generations_export_on_a_full_disk_keeps_the_old_file(small_disk: Path, tmp_path: Path) -> None:
    out = small_disk / "OLD.json"
    out.write_text(OLD)
    _fill(small_disk, leave=8192)
    result = _generation_export(tmp_path, out)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "cannot write the output to" in lines[0] and "is free there" in lines[0], lines  # refused before writing
    assert out.read_text() == OLD and not _leftovers(small_disk)


@pytest.mark.slow
@pytest.mark.models
def test_a_generations_export_that_fails_mid_write_keeps_the_old_file(tmp_path: Path) -> None:
    def limited() -> None:  # the file may not grow past 100 KB: the write fails part way, as a full disk would
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CEILING, MEMORY_CEILING))
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    out = tmp_path / "OLD.json"
    out.write_text(OLD)
    result = _generation_export(tmp_path, out, limited)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    assert "cannot write the output to" in lines[0] and "File too large" in lines[0], lines
    assert out.read_text() == OLD and not _leftovers(tmp_path)
