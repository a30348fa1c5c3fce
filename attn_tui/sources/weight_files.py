"""A folder's safetensors weights read as data: headers, shard index and shapes checked against config.json.

Torch-free and before transformers sees the folder, so a broken or lying checkpoint is one line, at
once: a file cut short, an index naming a shard that is not there (or a path out of the folder), a
config.json whose sizes disagree with the tensors. transformers would refuse some of these only after
importing torch and building the model, with a message pointing at a report it does not show, and
one of them not at all: a config naming more layers than the weights hold would get the missing
layers' weights drawn at random, and its attention traced as if it were the model's.
"""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from attn_tui.ask.budget import format_bytes
from attn_tui.i18n import Msg
from attn_tui.io.files import quoted

SINGLE = "model.safetensors"
INDEX = "model.safetensors.index.json"
# A header's bytes: some hundred per tensor, and the largest checkpoints hold tens of thousands of tensors a file
# (a few MB). Past this, a header is not a model's: it is refused before it is parsed (safetensors allows 100 MB,
# whose million entries take a gigabyte and minutes to parse and check).
MAX_HEADER = 16 * 1024**2
MAX_INDEX = 64 * 1024**2
ITEM_BYTES = {"BOOL": 1, "U8": 1, "I8": 1, "F8_E4M3": 1, "F8_E5M2": 1, "I16": 2, "U16": 2, "F16": 2, "BF16": 2,
              "I32": 4, "U32": 4, "F32": 4, "I64": 8, "U64": 8, "F64": 8}
_FEED_FORWARD = ("mlp.", "block_sparse_moe.", "feed_forward.")  # a layer's MLP or experts, by the names models use
_LAYER = re.compile(r"(?:^|\.)(?:layers|layer|h)\.(\d+)\.")  # Llama's layers.3., BERT's layer.3., GPT-2's h.3.
_EMBEDDINGS = ("embed_tokens.weight", "embed_in.weight", "wte.weight", "word_embeddings.weight")

Shapes = dict[str, tuple[int, ...]]


class WeightsError(Exception):
    """What is wrong with the weight files, said in one line (folder.py turns it into a ModelError)."""

    def __init__(self, message: Msg) -> None:
        super().__init__(message.english())
        self.message = message


def weight_shapes(folder: Path) -> Shapes | None:
    """Every tensor's shape, from the safetensors file(s) transformers would read; None without any."""
    if (folder / SINGLE).is_file():
        return _header(folder / SINGLE)
    if not (folder / INDEX).is_file():
        return None
    shapes: Shapes = {}
    for shard in _shards(folder):
        shapes.update(_header(folder / shard))
    return shapes


def _shards(folder: Path) -> list[str]:
    """The shard files the index names, each a plain file name found in the folder."""
    path = folder / INDEX
    if path.stat().st_size > MAX_INDEX:
        raise WeightsError(Msg("{file} is larger than any shard index", file=INDEX))
    try:
        index = json.loads(path.read_bytes())
    except (ValueError, UnicodeDecodeError):
        raise WeightsError(Msg("{file} is not readable JSON", file=INDEX)) from None
    mapping = index.get("weight_map") if isinstance(index, dict) else None
    if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
        raise WeightsError(Msg("{file} has no weight_map of tensor names to shard files", file=INDEX))
    shards = sorted(set(mapping.values()))
    for shard in shards:
        if Path(shard).name != shard or shard in ("", ".", ".."):
            raise WeightsError(Msg("{file} names the shard {shard}, which is not a file of the folder", file=INDEX,
                                   shard=quoted(shard, 60)))
        if not (folder / shard).is_file():
            raise WeightsError(Msg("{file} names the shard {shard}, which is missing", file=INDEX,
                                   shard=quoted(shard, 60)))
    return shards


def _header(path: Path) -> Shapes:
    """A safetensors file's tensor shapes; refused where the header is malformed or the data is cut short."""
    size = path.stat().st_size
    broken = Msg("{file} is not a safetensors file (its header is malformed)", file=quoted(path.name, 60))
    with open(path, "rb") as handle:
        head = handle.read(8)
        if len(head) < 8:
            raise WeightsError(broken)
        (length,) = struct.unpack("<Q", head)
        if length > MAX_HEADER:
            raise WeightsError(Msg("{file} has a header of {size}; a model's is at most {most}",
                                   file=quoted(path.name, 60), size=format_bytes(length),
                                   most=format_bytes(MAX_HEADER)))
        if length > size - 8:
            raise WeightsError(Msg("{file} is cut short: its header alone needs {need} bytes, the file holds {have}",
                                   file=quoted(path.name, 60), need=8 + length, have=size))
        try:
            header = json.loads(handle.read(length))
        except (ValueError, UnicodeDecodeError):
            raise WeightsError(broken) from None
    if not isinstance(header, dict):
        raise WeightsError(broken)
    shapes: Shapes = {}
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            shape, (begin, stop) = _counts(entry["shape"]), _counts(entry["data_offsets"])
            item = ITEM_BYTES.get(entry["dtype"])  # a dtype newer than this table: its bytes are not checked
        except (TypeError, KeyError, ValueError):
            raise WeightsError(broken) from None
        count = 1
        for n in shape:
            count *= n
        if not begin <= stop or (item is not None and stop - begin != count * item):
            raise WeightsError(broken)
        shapes[name] = shape
        end = max(end, stop)
    if 8 + length + end > size:
        raise WeightsError(Msg("{file} is cut short: its header describes {need} bytes of tensors, the file "
                               "holds {have}", file=quoted(path.name, 60), need=end, have=size - 8 - length))
    return shapes


def _counts(value: object) -> tuple[int, ...]:
    """A JSON list of whole numbers ≥ 0 (a shape, a pair of offsets), or ValueError."""
    if not isinstance(value, list) or not all(type(n) is int and n >= 0 for n in value):
        raise ValueError(value)
    return tuple(value)


def check_shapes(shapes: Shapes, sizes: dict[str, int | None], kinds: tuple[str, ...] = (),
                 query_parts: int = 1) -> None:
    """config.json's layers, width, vocabulary and heads against the tensors the files hold.

    `kinds`: config.json's `layer_types` where layers differ (Qwen3-Next's linear and full attention): a layer
    holds what the first layer of its kind holds. `query_parts`: 2 where q_proj holds each head's query and
    its output gate."""
    parts: dict[int, set[str]] = {}  # layer → the names of its tensors, past the layer's own prefix
    for name in shapes:
        if m := _LAYER.search(name):
            parts.setdefault(int(m.group(1)), set()).add(name[m.end():])
    said = sizes.get("layers")
    if parts and said is not None and said != max(parts) + 1:
        raise WeightsError(Msg("config.json says {said} layers; its weights hold {held}", said=said,
                               held=max(parts) + 1))
    for layer in range(max(parts, default=-1) + 1):  # every layer holds what layer 0 holds (else drawn at random)
        # (all but its feed-forward, which may change from layer to layer: DeepSeek's dense first, then experts)
        first = kinds.index(kinds[layer]) if layer < len(kinds) else 0  # … or the first layer of its kind
        lacking = sorted(n for n in parts.get(first, set()) - parts.get(layer, set())
                         if not n.startswith(_FEED_FORWARD))
        if lacking:
            if first:
                raise WeightsError(Msg("layer {layer} of the weights lacks {name}, which layer {first} (the first of "
                                       "its kind) has", layer=layer, name=quoted(lacking[0], 60), first=first))
            raise WeightsError(Msg("layer {layer} of the weights lacks {name}, which layer 0 has", layer=layer,
                                   name=quoted(lacking[0], 60)))
    width, vocab, heads = sizes.get("width"), sizes.get("vocab"), sizes.get("heads")
    for name, shape in shapes.items():
        if name.endswith(_EMBEDDINGS) and width is not None and vocab is not None and shape != (vocab, width):
            _disagree(name, shape, (vocab, width), Msg("vocab × width"))
    if not width or not heads:
        return
    head_dim = sizes.get("head_dim") or width // heads
    kv = sizes.get("kv_heads") or heads
    # multi-head latent attention: head_dim is the rotary part only (DeepSeek names `qk_nope`, its Family.sizes)
    q_dim = head_dim + (sizes.get("qk_nope") or 0)
    rows = {"q_proj.weight": (query_parts * heads * q_dim,
                              Msg("heads × head_dim, width") if query_parts == 1 else
                              Msg("heads × 2·head_dim (query and gate), width")),
            "k_proj.weight": (kv * head_dim, Msg("kv heads × head_dim, width")),
            "v_proj.weight": (kv * head_dim, Msg("kv heads × head_dim, width")),
            "qkv_proj.weight": ((heads + 2 * kv) * head_dim, Msg("(heads + 2·kv heads) × head_dim, width")),
            "query_key_value.weight": (3 * heads * head_dim, Msg("3·heads × head_dim, width"))}
    for name, shape in shapes.items():
        for end, (expected, what) in rows.items():
            if name.endswith(("attn." + end, "attention." + end)) and shape != (expected, width):
                _disagree(name, shape, (expected, width), what)


def _disagree(name: str, shape: tuple[int, ...], expected: tuple[int, ...], what: Msg) -> None:
    raise WeightsError(Msg("config.json disagrees with its weights: {name} is {shape}; its sizes ({what}) make it "
                           "{expected}", name=quoted(name, 60), shape=" × ".join(map(str, shape)), what=what,
                           expected=" × ".join(map(str, expected))))


def size_mismatch(folder: Path, config: object) -> Msg | None:
    """Which weight's shape config.json disagrees with, and the config.json sizes that make it, from a model built
    on the meta device (no memory); None when every shape agrees or no file says. What transformers raises on a
    mismatch points at a report it does not show."""
    import torch
    from transformers import AutoModel

    shapes = weight_shapes(folder)
    if not shapes:
        return None
    with torch.device("meta"):
        built = {name: tuple(tensor.shape) for name, tensor in
                 AutoModel.from_config(config, trust_remote_code=False).state_dict().items()}  # type: ignore[no-untyped-call]
    sizes = {key: value for key, value in vars(config).items()
             if isinstance(value, int) and not isinstance(value, bool)}
    for name, shape in shapes.items():
        expected = built.get(name) or next((built[b] for b in built if name.endswith("." + b)), None)
        if expected is None or expected == shape:
            continue
        wrong = {want for got, want in zip(shape, expected) if got != want} if len(shape) == len(expected) \
            else set(expected)
        keys = sorted(key for key, value in sizes.items() if value in wrong)  # the sizes that made the wrong parts
        return Msg("config.json disagrees with its weights: {name} is {shape} in the files, and config.json's sizes "
                   "make it {expected}{keys}", name=quoted(name, 60), shape=" × ".join(map(str, shape)),
                   expected=" × ".join(map(str, expected)),
                   keys=" (" + ", ".join(f"{key} {sizes[key]}" for key in keys[:3]) + ")" if keys else "")
    return None

