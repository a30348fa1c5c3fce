"""A recorded Trace across a process boundary: the child that ran the user's file writes it, attn-tui reads it back.

Nothing is unpickled. The tensors travel in one `torch.save` file read back with
`weights_only=True`; everything else (places, ops, axes, masks, the run's metadata, the
warnings as translatable messages) travels as JSON whose objects are rebuilt only from an
explicit list of attn-tui's own dataclasses, by their fields. A file the child did not
write, or wrote wrong, is a WireError, never code run on attn-tui's side.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import torch

from attn_tui.errors import AttnError
from attn_tui.i18n import Join, Msg, Plural
from attn_tui.sources.recorder.sdpa_lazy import SdpaRecipe, TiledSdpaMask
from attn_tui.trace.lazy import MATERIALIZE_CELLS, LazyTensor, ScoreTiles
from attn_tui.trace.masks import MaskSpec
from attn_tui.trace.meta import RecordedRun
from attn_tui.trace.ops import Given, Masking, Place
from attn_tui.trace.stage import Axis, Stage, Trace
from attn_tui.trace.values import StageStats

TENSORS = "tensors.pt"
DOCUMENT = "trace.json"


class WireError(AttnError):
    """The recording that came back from the child could not be read."""


TRACE = "attn_tui.trace."


def _allowed() -> dict[str, type]:
    from attn_tui.trace import ops

    kinds: dict[str, type] = {cls.__name__: cls for cls in (Axis, Stage, MaskSpec, RecordedRun, StageStats,
                                                            SdpaRecipe, TiledSdpaMask)}
    for value in vars(ops).values():  # the Op vocabulary and Place, wherever in trace/ each is defined
        if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__.startswith(TRACE):
            kinds[value.__name__] = value
    return kinds


class _Writer:
    def __init__(self) -> None:
        self.tensors: list[torch.Tensor] = []
        self.recipes: list[Any] = []  # each lazy SDPA call's recipe, encoded once for all its heads and stages
        self._recipe_at: dict[int, int] = {}

    def encode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, SdpaRecipe):
            at = self._recipe_at.get(id(value))
            if at is None:
                at = self._recipe_at[id(value)] = len(self.recipes)
                self.recipes.append(None)
                self.recipes[at] = self._fields(value)
            return {"recipe": at}
        if isinstance(value, LazyTensor):
            recipe = getattr(value.tiles, "recipe", None)
            if not isinstance(recipe, SdpaRecipe):
                raise WireError("cannot send a lazy stage without its recipe")
            return {"lazy": value.name, "head": value.head, "shape": list(value.shape),
                    "dtype": str(value.dtype).replace("torch.", ""), "of": self.encode(recipe)}
        if isinstance(value, float):
            return value if math.isfinite(value) else {"float": repr(value)}
        if isinstance(value, torch.Tensor):
            self.tensors.append(value.detach().cpu())  # views of one tensor share its storage in the file
            return {"tensor": len(self.tensors) - 1}
        if isinstance(value, Join):
            return {"join": value.text, "parts": [self.encode(p) for p in value.parts]}
        if isinstance(value, Msg):
            values = {k: v if isinstance(v, (Msg, int, float, str)) else str(v) for k, v in value.values.items()}
            out: dict[str, Any] = {"msg": value.text, "values": {k: self.encode(v) for k, v in values.items()}}
            if isinstance(value, Plural):
                out["plural"] = value.plural
            return out
        if isinstance(value, tuple):
            return {"tuple": [self.encode(v) for v in value]}
        if isinstance(value, list):
            return [self.encode(v) for v in value]
        if isinstance(value, dict):
            return {"pairs": [[self.encode(k), self.encode(v)] for k, v in value.items()]}
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            return self._fields(value)
        raise WireError(f"cannot send a {type(value).__name__}")

    def _fields(self, value: Any) -> dict[str, Any]:
        fields = {f.name: self.encode(getattr(value, f.name)) for f in dataclasses.fields(value) if f.init}
        return {"kind": type(value).__name__, "fields": fields}


class _Reader:
    def __init__(self, tensors: list[torch.Tensor], recipes: list[Any] | None = None) -> None:
        self.tensors = tensors
        self.kinds = _allowed()
        self.recipes = recipes or []
        self._recipes: dict[int, SdpaRecipe] = {}
        self._families: dict[int, ScoreTiles] = {}

    def recipe(self, at: int) -> SdpaRecipe:
        """Recipe `at`, rebuilt once: every stage of its call computes its tiles from the same tensors."""
        if at not in self._recipes:
            recipe = self.decode(self.recipes[at])
            if not isinstance(recipe, SdpaRecipe):
                raise WireError("a recipe is not an SdpaRecipe")
            self._recipes[at] = recipe
        return self._recipes[at]

    def lazy(self, value: dict[str, Any]) -> LazyTensor:
        at = value["of"]["recipe"]
        recipe = self.recipe(int(at))
        if at not in self._families:
            self._families[at] = recipe.family()
        dtype = getattr(torch, str(value["dtype"]), None)
        if not isinstance(dtype, torch.dtype):
            raise WireError("a lazy stage of no dtype")
        return LazyTensor(self._families[at], str(value["lazy"]), int(value["head"]),
                          tuple(int(x) for x in value["shape"]), dtype, torch.device("cpu"))

    def decode(self, value: Any) -> Any:
        if value is None or isinstance(value, (bool, int, float, str)):
            return value
        if isinstance(value, list):
            return [self.decode(v) for v in value]
        if not isinstance(value, dict):
            raise WireError(f"unexpected {type(value).__name__}")
        if "float" in value:
            return float(str(value["float"]))  # inf, -inf, nan only: float() parses nothing else
        if "tensor" in value:
            return self.tensors[int(value["tensor"])]
        if "recipe" in value:
            return self.recipe(int(value["recipe"]))
        if "lazy" in value:
            return self.lazy(value)
        if "tuple" in value:
            return tuple(self.decode(v) for v in value["tuple"])
        if "pairs" in value:
            return {self.decode(k): self.decode(v) for k, v in value["pairs"]}
        if "join" in value:
            return Join(str(value["join"]), *(self.decode(p) for p in value["parts"]))
        if "msg" in value:
            values = {str(k): self.decode(v) for k, v in value["values"].items()}
            if "plural" in value:
                return Plural(str(value["msg"]), str(value["plural"]), **values)
            return Msg(str(value["msg"]), **values)
        if "kind" in value:
            cls = self.kinds.get(str(value["kind"]))
            if cls is None:
                raise WireError(f"unknown kind {str(value['kind'])[:40]!r}")
            return cls(**{str(k): self.decode(v) for k, v in value["fields"].items()})
        raise WireError("unexpected object")


def _sendable(stage: Stage, left: list[str]) -> Stage | None:
    """A stage as it can travel: a lazy one (a long flex_attention call's, computed by tiles with the user's
    functions, which run only in the child) is sent whole when it is small enough, else left out and said."""
    if not isinstance(stage.data, LazyTensor) or isinstance(getattr(stage.data.tiles, "recipe", None), SdpaRecipe):
        return stage  # a long SDPA call's stages travel lazily: their recipe holds tensors only
    if stage.data.numel() > MATERIALIZE_CELLS:
        left.append(stage.key)
        return None
    op = stage.op
    whole = getattr(op.mask, "whole", None) if isinstance(op, Masking) else None
    if isinstance(op, Masking) and whole is not None:
        op = dataclasses.replace(op, mask=whole())  # a mask computed by tiles, made a plain MaskSpec
    return dataclasses.replace(stage, data=stage.data.whole(), op=op)


def _reads(value: Any) -> list[Place]:
    if isinstance(value, Place):
        return [value]
    if isinstance(value, tuple):
        return [place for item in value for place in _reads(item)]
    return []


def _without(stage: Stage, places: set[Place]) -> Stage:
    """`stage`, its op made Given when the op reads a stage that is not sent."""
    if not dataclasses.is_dataclass(stage.op):
        return stage
    read = [place for f in dataclasses.fields(stage.op) for place in _reads(getattr(stage.op, f.name))]
    if all(place in places for place in read):
        return stage
    return dataclasses.replace(stage, op=Given(Msg("computed from stages left in the traced process")))


def write_trace(trace: Trace, folder: Path) -> None:
    """`trace` as two files in `folder`: its tensors (torch.save) and the rest (JSON)."""
    writer = _Writer()
    left: list[str] = []
    stages = [sent for stage in trace.stages.values() if (sent := _sendable(stage, left)) is not None]
    places = {stage.place for stage in stages}
    if left:  # a stage made from one left behind is shown as it is: the inspector cannot recompute it here
        stages = [_without(stage, places) for stage in stages]
    warnings = list(trace.warnings)
    if left:
        warnings.append(Plural("{n} stage of a long flex_attention call stays in the traced process (computed by "
                               "tiles with your score_mod and mask_mod; attn_tui.record() shows it): {first}",
                               "{n} stages of long flex_attention calls stay in the traced process (computed by "
                               "tiles with your score_mod and mask_mod; attn_tui.record() shows them): {first} …",
                               n=len(left), first=left[0]))
    document = {"meta": writer.encode(trace.meta), "query_tokens": writer.encode(trace.query_tokens),
                "key_tokens": writer.encode(trace.key_tokens), "device": trace.device, "dtype": trace.dtype,
                "stages": [writer.encode(stage) for stage in stages],
                "params": writer.encode(trace.params), "inputs": writer.encode(trace.inputs),
                "mask": writer.encode(trace.mask), "warnings": writer.encode(warnings),
                "stats": writer.encode({place: stats for place, stats in trace.stats.items() if place in places})}
    document["recipes"] = writer.recipes
    torch.save(writer.tensors, folder / TENSORS)
    (folder / DOCUMENT).write_text(json.dumps(document), encoding="utf-8")


def read_trace(folder: Path) -> Trace:
    """The trace `write_trace` wrote, rebuilt from attn-tui's own types only."""
    try:
        tensors = torch.load(folder / TENSORS, weights_only=True, map_location="cpu")
        document = json.loads((folder / DOCUMENT).read_text(encoding="utf-8"))
        if not isinstance(tensors, list) or not all(isinstance(t, torch.Tensor) for t in tensors):
            raise WireError("the tensors are not a list of tensors")
        reader = _Reader(tensors, document.get("recipes"))
        meta = reader.decode(document["meta"])
        if not isinstance(meta, RecordedRun):
            raise WireError("not a recording")
        trace = Trace(meta, reader.decode(document["query_tokens"]), reader.decode(document["key_tokens"]),
                      str(document["device"]), str(document["dtype"]))
        for encoded in document["stages"]:
            stage = reader.decode(encoded)
            if not isinstance(stage, Stage):
                raise WireError("a stage is not a Stage")
            trace.put(stage)
        trace.params = reader.decode(document["params"])
        trace.inputs = reader.decode(document["inputs"])
        trace.mask = reader.decode(document["mask"])
        trace.warnings = reader.decode(document["warnings"])
        trace.stats = reader.decode(document["stats"])
        return trace
    except WireError:
        raise
    except Exception as exc:  # a file cut short (the child was stopped while writing), or not ours
        raise WireError(f"{type(exc).__name__}: {' '.join(str(exc).split())[:120]}") from exc


def encode_message(message: object) -> Any:
    """A one-line message (text or Msg, read later in the language on show) as JSON."""
    return _Writer().encode(message if isinstance(message, (str, Msg)) else str(message))


def decode_message(value: Any) -> str | Msg:
    try:
        message = _Reader([]).decode(value)
    except Exception as exc:
        raise WireError(f"{type(exc).__name__}") from exc
    if not isinstance(message, (str, Msg)):
        raise WireError("not a message")
    return message
