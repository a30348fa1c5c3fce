"""A built-in GGUF model converted once into a safetensors copy in the user cache folder, then mapped on every open.

De-quantising a GGUF file costs tens of seconds on each load; transformers maps a
safetensors file in a fraction of one. So the first open loads the GGUF file, lets
transformers' `save_pretrained` write the model (float32, as de-quantised) and its tokenizer
into a scratch folder, records each file's sha256 there, and renames the folder into place:
a reader sees the whole copy or none, and of two processes that convert at once one rename
wins and the other uses the winner's copy. The copy's name holds the GGUF file's sha256 and
the converter's version (ours and transformers'), so a new file or a new converter makes a
new copy.

Each open checks the copy against its record. Hashing the 0.5–1 GB of weights costs several
times the load itself (benchmarks/open.py), so a file is hashed again only when its stat
stamp (inode, size, modification and change times) is not the one recorded: any write to a
file, and any `touch` that would hide one, moves its change time, which no user can set
back. A changed file whose hash still matches gets its new stamp recorded; one whose hash
does not is discarded with the whole copy, which is converted again.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import secrets
import shutil
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import torch

from attn_tui.ask.budget import Estimate, format_bytes, memory_limit
from attn_tui.ask.models import GGUF_MODELS
from attn_tui.i18n import N_, Msg
from attn_tui.io.cache import cache_dir
from attn_tui.io.files import partial, quoted, read_text, write_text_atomic
from attn_tui.sources.folder import ModelError
from attn_tui.sources.gguf_file import install_hint, sha256_of, stated_sha256, verified_file
from attn_tui.sources.progress import report

CONVERTER_VERSION = 1  # ours: raised whenever what a copy holds changes
RECORD = "attn-tui-copy.json"  # the copy's own record: the source, the converter, each file's sha256 and stamp
LOAD_FACTOR = 12  # bytes in memory while converting per byte of a 4-bit GGUF file (de-quantised to float32, peak)
DISK_FACTOR = 6  # bytes of the safetensors copy per byte of a 4-bit GGUF file (measured: SmolLM2 5.3, Gemma 3 4.3)


def converter() -> str:
    """The converter's version: ours and the transformers that de-quantises and saves."""
    import transformers

    return f"v{CONVERTER_VERSION}-transformers-{transformers.__version__}"


def copy_folder(name: str, sha256: str) -> Path:
    """Where the copy of `name`'s file with this sha256, made by this converter, lives."""
    return cache_dir() / "models" / f"{name}-{sha256[:16]}-{converter()}"


def _stamp(path: Path) -> list[int]:
    st = path.stat()
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _record(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(read_text(folder / RECORD, RECORD, limit=1024 * 1024))
    except Exception:
        return None
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else None


def problem(folder: Path, name: str, sha256: str) -> Msg | None:
    """What is wrong with the copy in `folder` (None: it is what was written).

    A file whose stamp moved is hashed again (reported as a phase); if every hash still
    matches, the new stamps are recorded so the next open is quick again.
    """
    record = _record(folder)
    if record is None or record.get("source_sha256") != sha256 or record.get("converter") != converter():
        return Msg("its record is missing or is not this converter's")
    files: dict[str, Any] = record["files"]
    # (another process's record being rewritten, `.<name>.<pid>.<hex>.part`, is not a change)
    on_disk = {entry.name for entry in folder.iterdir() if not (entry.name.startswith(".") and
                                                                entry.name.endswith(".part"))}
    if on_disk != set(files) | {RECORD}:
        return Msg("files were added or removed")
    moved = False
    for file, facts in files.items():
        path = folder / file
        if not path.is_file() or not isinstance(facts, dict):
            return Msg("{file} is not a file", file=file)
        stamp = _stamp(path)
        if stamp == facts.get("stamp"):
            continue
        if stamp[1] != facts.get("size"):
            return Msg("{file} changed size", file=file)
        if sha256_of([path], Msg("checking the cached copy of {name}", name=name)) != facts.get("sha256"):
            return Msg("{file} does not match its sha256", file=file)
        facts["stamp"], moved = stamp, True
    if moved:
        with contextlib.suppress(OSError):  # a read-only cache only costs the hash again next time
            write_text_atomic(folder / RECORD, json.dumps(record, indent=1))
    return None


def write_record(folder: Path, name: str, sha256: str) -> None:
    """Record each file of a copy just written: its sha256, size and stat stamp, with the source and converter."""
    files = {}
    for path in sorted(folder.iterdir()):
        digest = sha256_of([path], Msg("recording the sha256 of the copy of {name}", name=name))
        files[path.name] = {"sha256": digest, "size": path.stat().st_size, "stamp": _stamp(path)}
    record = {"source": GGUF_MODELS[name].file, "source_sha256": sha256, "converter": converter(), "files": files}
    (folder / RECORD).write_text(json.dumps(record, indent=1), encoding="utf-8")


def _discard(folder: Path) -> None:
    """Move a bad copy out of the way at once (a rename), then delete it; a copy still mapped stays readable. What
    stands in its place may be no folder at all (a link, a file): it is removed, never followed."""
    aside = folder.with_name(f".discarded-{secrets.token_hex(4)}")
    try:
        folder.rename(aside)
    except OSError:
        return  # another process moved it first
    if aside.is_symlink() or not aside.is_dir():
        with contextlib.suppress(OSError):
            aside.unlink()
    else:
        shutil.rmtree(aside, ignore_errors=True)


def cached_copy(name: str, max_memory: int | None = None) -> Path:
    """The folder of `name`'s safetensors copy: the one on disk when it checks out, else converted now."""
    sha256 = stated_sha256(name)
    folder = copy_folder(name, sha256)
    if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):  # a link (a loop, /dev/null), a file
        report(Msg("the cached copy of {name} is not a folder of attn-tui's: converting it again", name=name))
        _discard(folder)
    elif folder.is_dir():
        wrong = problem(folder, name, sha256)
        if wrong is None:
            return folder
        report(Msg("the cached copy of {name} was changed ({problem}): converting it again", name=name,
                   problem=wrong))
        _discard(folder)
    return _convert(name, folder, max_memory)


def _unwritable(name: str, folder: Path, exc: OSError) -> ModelError:
    return ModelError(Msg("cannot write the copy of {name} into the cache folder {folder}: {reason}", name=name,
                          folder=str(folder.parent), reason=exc.strerror or exc))


def _convert(name: str, folder: Path, max_memory: int | None) -> Path:
    """Convert the checked GGUF file into a scratch folder beside `folder`, record it, and rename it into place."""
    source, sha256 = verified_file(name)
    needed = Estimate()
    needed.add(N_("weights"), LOAD_FACTOR * source.stat().st_size, 1)
    needed.check(memory_limit(max_memory), Msg("converting {name}", name=quoted(name)))
    try:  # an unwritable or full cache is found before the minute of converting, not after
        folder.parent.mkdir(parents=True, exist_ok=True)
        free = shutil.disk_usage(folder.parent).free
        scratch = Path(tempfile.mkdtemp(prefix=".converting-", dir=folder.parent))
    except OSError as exc:
        raise _unwritable(name, folder, exc) from None
    if DISK_FACTOR * source.stat().st_size > free:
        shutil.rmtree(scratch, ignore_errors=True)
        raise ModelError(Msg("the copy of {name} needs about {size} in the cache folder {folder}, which has {free} "
                             "free: free some disk, or point ATTN_TUI_CACHE_DIR elsewhere", name=name,
                             size=format_bytes(DISK_FACTOR * source.stat().st_size), folder=quoted(str(folder.parent)),
                             free=format_bytes(free)))
    writing = Msg("writing the safetensors copy of {name}", name=name)
    with partial(scratch):
        try:
            model, tokenizer = _read_gguf(name, source)
            report(writing, 0, 2)
            model.save_pretrained(scratch)
            tokenizer.save_pretrained(scratch)
            report(writing, 1, 2)
            write_record(scratch, name, sha256)
            report(writing, 2, 2)
            try:
                scratch.rename(folder)
            except OSError:
                if not folder.is_dir():
                    raise
                # another process converted it at the same time: its copy is as good as ours
        except OSError as exc:
            raise _unwritable(name, folder, exc) from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    return folder


_CONVERTING = threading.Lock()  # one conversion at a time reports through transformers' progress hook


@contextlib.contextmanager
def tensors_reported(what: Msg) -> Iterator[None]:
    """transformers de-quantises a GGUF file's tensors one at a time under its own tqdm bar (on stderr, which is
    swallowed here): within the block each tensor is reported as it is done, so the app's bar moves with the
    conversion's real progress. Without that hook (another transformers) the phase is reported without a count."""
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:
        yield
        return
    bar = getattr(gguf_utils, "tqdm", None)
    if bar is None:
        yield
        return

    def counted(items: Iterable[Any] | None = None, *args: Any, **kwargs: Any) -> Any:
        if items is None:
            return bar(*args, **kwargs)
        return _each_reported(list(items), what)

    with _CONVERTING:
        setattr(gguf_utils, "tqdm", counted)  # noqa: B010  (the module does not export its bar)
        try:
            yield
        finally:
            setattr(gguf_utils, "tqdm", bar)  # noqa: B010


def _each_reported(items: list[Any], what: Msg) -> Iterator[Any]:
    for done, item in enumerate(items):
        report(what, done, len(items))
        yield item
    report(what, len(items), len(items))


def _read_gguf(name: str, source: Path) -> tuple[Any, Any]:
    """transformers' own GGUF reader, de-quantising to float32, offline, on the CPU, with no code trusted.

    The file is read from a private folder holding nothing but a link to it, so no stray
    tokenizer or config beside it is read; the de-quantising progress bar (stderr) is swallowed.
    """
    from attn_tui.sources.hf import no_stdin

    for key in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS", "TQDM_DISABLE"):
        os.environ.setdefault(key, "1")
    try:
        import transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig
    except ImportError:
        raise ModelError(Msg("{name} needs transformers, gguf and accelerate: {hint}", name=name,
                             hint=install_hint(name))) from None
    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers.logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        with tempfile.TemporaryDirectory(prefix="attn-tui-gguf-") as private, no_stdin(), \
                contextlib.redirect_stderr(io.StringIO()), \
                tensors_reported(Msg("converting {name} (once): de-quantising its tensors", name=name)):
            (Path(private) / source.name).symlink_to(source)
            report(Msg("converting {name} (once): building its tokenizer", name=name))
            tokenizer = AutoTokenizer.from_pretrained(private, gguf_file=source.name, trust_remote_code=False)
            report(Msg("converting {name} (once): reading its GGUF file", name=name))
            model = AutoModelForCausalLM.from_pretrained(private, gguf_file=source.name, trust_remote_code=False,
                                                         quantization_config=GgufConfig(dequantize=True),
                                                         attn_implementation="eager", dtype=torch.float32)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if isinstance(exc, ImportError) or any(part in first.lower() for part in ("gguf", "accelerate")):
            first = f"{first[:100]} ({install_hint(name)})"
        raise ModelError(Msg("cannot load {name}: {reason}", name=quoted(name), reason=first[:160])) from None
    # Asked de-quantised (never left packed for a GGUF matmul kernel), the weights are plain float32 tensors: only
    # the record that they came quantised stops save_pretrained.
    model.hf_quantizer = None  # type: ignore[assignment]
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    return model, tokenizer
