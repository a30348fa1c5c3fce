"""Trace → JSON / .npz / .csv, so anything shown can be checked or recomputed elsewhere.

JSON has no infinities or NaN, so those become the strings "inf", "-inf", "nan" and the
document stays standard JSON that any parser reads.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import shutil
import tempfile
import zipfile
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, replace
from pathlib import Path
from typing import TextIO

import numpy as np
import torch

from attn_tui.ask.budget import JSON_BYTES_PER_NUMBER, format_bytes
from attn_tui.errors import ConfigError, InputError
from attn_tui.i18n import Msg
from attn_tui.io.controls import json_safe, printable
from attn_tui.io.files import partial, quoted, writable_file, writable_folder, write_atomic
from attn_tui.io.mask_json import mask_numbers, stage_mask
from attn_tui.trace.geometry import HeadGeometry, LayerGeometry, Positional
from attn_tui.trace.lazy import LazyTensor
from attn_tui.trace.reads import inputs_of
from attn_tui.trace.stage import Stage, Trace

BLOCK_CELLS = 1 << 16  # values converted to Python numbers (or float64) at a time while writing
SMALL_PARAMS = 20_000  # numbers; parameters beyond this go into the JSON only when asked


def _spell(value: object) -> object:
    """Non-finite numbers as the strings "inf", "-inf", "nan", at any depth of nesting."""
    if isinstance(value, list):
        return [_spell(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def select_stages(trace: Trace, name: str | None = None, layer: int | None = None,
                  head: int | None = None) -> list[Stage]:
    """The stages to print: all, one name, one layer and head; unknown names list the valid ones."""
    heads = trace.heads_at(layer)  # a layer may have its own count (Qwen3-Next's linear layers)
    if head is not None and not 0 <= head < heads:
        if heads == 1:
            raise ConfigError(Msg("--head applies to several heads; {title} has one", title=trace.meta.title))
        if trace.meta.layer_heads and layer is not None:
            raise ConfigError(Msg("--head {head} is out of range: layer {layer} of {model} has heads 0…{last}",
                                  head=head, layer=layer, model=trace.meta.title, last=heads - 1))
        raise ConfigError(Msg("--head {head} is out of range: there are {n} heads (0…{last})", head=head,
                              n=heads, last=heads - 1))
    if layer is not None or head is not None:
        trace.fill(layer, head)
    trace.fill_steps(layer)  # a written step's stages beyond its weights are traced when asked: here, to write them
    stages = [s for s in trace
              if (layer is None or s.layer in (None, layer)) and (head is None or s.head in (None, head))]
    if name is not None:
        names = list(dict.fromkeys(s.name for s in stages))
        if name not in names:
            raise ConfigError(Msg("{title} has no stage {name} here; its stages are: {names}", title=trace.meta.title,
                                  name=quoted(name), names=", ".join(names)))
        stages = [s for s in stages if s.name == name]
    return stages


def _header(trace: Trace) -> dict[str, object]:
    return trace.meta.header() | {
        "device": trace.device,
        "dtype": trace.dtype,
        "tokens": {"query": list(trace.query_tokens), "key": list(trace.key_tokens)},
        "mask_convention": "1 = may attend, 0 = masked (torch SDPA)",
        "mask": _mask(trace),
        "warnings": [str(w) for w in trace.warnings],
        "geometry": geometry_header(trace),
        "steps": steps_header(trace),
    }


def geometry_header(trace: Trace) -> dict[str, object]:
    """Each traced layer's geometry by layer number (mask, window, positions, scale, temperature, cap, sink, the
    heads that differ): with the exported q and k, enough to redo the layer's weights. A model traces a layer when
    it is asked for (`select_stages` fills the one exported), so a model's other layers are not computed for it."""
    return {str(layer): asdict(geometry) for layer, geometry in sorted(trace.geometry.items())}


def read_geometry(header: Mapping[str, object]) -> dict[int, LayerGeometry]:
    """The layers' geometry back from `geometry_header`'s JSON (the JSON export's header)."""
    out = {}
    for layer, raw in header.items():
        assert isinstance(raw, dict)
        fields = dict(raw)
        fields["positional"] = Positional(**fields["positional"])
        fields["heads"] = tuple(HeadGeometry(**head) for head in fields["heads"])
        out[int(layer)] = LayerGeometry(**fields)
    return out


def steps_header(trace: Trace) -> dict[str, object] | None:
    """What the steps are (decoder steps, tokens, key tiles, recorded calls), each step's label in the language
    on show and the keys it adds; None for a trace without steps."""
    steps = trace.step_axis
    if steps is None:
        return None
    return {"kind": steps.kind, "names": [str(step.name) for step in steps],
            "labels": [str(step.label) for step in steps], "new_keys": [list(step.new_keys) for step in steps]}


def _mask(trace: Trace) -> object:
    """The whole 0/1 matrix; for a long input (its score stages lazy) the mask's parts instead."""
    if trace.mask is None:
        return None
    if trace.lazy:
        return trace.mask.as_dict()
    return trace.mask.allowed.to("cpu", torch.int64).tolist()


def params_are_small(trace: Trace) -> bool:
    """Parameters go into the JSON unasked only while they stay a small part of it."""
    return sum(t.numel() for t in trace.params.values()) <= SMALL_PARAMS


def _dumps(value: object) -> str:
    """JSON of user text (labels, titles, warnings): readable Korean, but no character that acts on a terminal."""
    return json_safe(json.dumps(value, ensure_ascii=False, allow_nan=False))


def _numbers(row: object) -> str:
    """JSON of a list of numbers: nothing to escape, so no scan of every row."""
    return json.dumps(row, allow_nan=False)


def _blocks(data: torch.Tensor | LazyTensor) -> Iterator[torch.Tensor]:
    """A stage's values a block of first-axis rows at a time (a lazy stage computes only that block)."""
    rows = max(1, BLOCK_CELLS // max(1, math.prod(data.shape[1:])))
    for start in range(0, data.shape[0], rows):
        yield data[start:start + rows].detach() if isinstance(data, torch.Tensor) else data.rows(start, start + rows)


def _write_tensor(data: torch.Tensor | LazyTensor, out: TextIO) -> None:
    """Nested JSON lists, written a block of rows at a time: memory stays one block, whatever the size."""
    if data.dim() <= 1:
        assert isinstance(data, torch.Tensor)
        out.write(_numbers(_spell(data.detach().to("cpu", torch.float64).tolist())))
        return
    out.write("[")
    first = True
    for block in _blocks(data):
        if block.dim() > 2:
            for n in range(block.shape[0]):
                out.write("" if first else ", ")
                first = False
                _write_tensor(block[n], out)
            continue
        rows = block.to("cpu", torch.float64)
        clean = bool(torch.isfinite(rows).all())
        for row in rows.tolist():
            out.write("" if first else ", ")
            first = False
            out.write(_numbers(row if clean else _spell(row)))
    out.write("]")


def _write_named(tensors: dict[str, torch.Tensor], out: TextIO) -> None:
    out.write("{")
    for n, (name, tensor) in enumerate(tensors.items()):
        out.write((", " if n else "") + _dumps(name) + ": ")
        _write_tensor(tensor, out)
    out.write("}")


def write_trace_json(trace: Trace, out: TextIO, stages: list[Stage] | None = None,
                     params: bool | None = None) -> None:
    """The trace as one JSON document, streamed stage by stage and row block by row block.

    `params` None includes the learned parameters only when they are small (a 4096-wide
    model's weights would dwarf a 2×2 stage); True always, False never. The inputs are those the chosen stages
    are made from (`trace.reads.inputs_of`).
    """
    out.write("{")
    for key, value in _header(trace).items():
        out.write(_dumps(key) + ": " + _dumps(value) + ", ")
    out.write('"inputs": ')  # the chosen stages' own: a model's other layers' inputs would dwarf one stage
    _write_named({name: trace.inputs[name] for name in inputs_of(trace, stages)}, out)
    include = params_are_small(trace) if params is None else params
    out.write(', "params": ')
    if include:
        _write_named(trace.params, out)
    else:
        out.write(_dumps({"omitted": f"{len(trace.params)} parameters; --params includes them"}))
    out.write(', "stages": [')
    for n, stage in enumerate(list(trace) if stages is None else stages):
        meta: dict[str, object] = {
            "name": stage.name, "key": stage.key, "layer": stage.layer, "head": stage.head, "step": stage.step,
            "module": stage.place.module, "origin": stage.origin, "formula": str(stage.formula),
            "shape": list(stage.shape), "axes": [{"name": a.name, "labels": list(a.labels)} for a in stage.axes]}
        if (mask := stage_mask(trace, stage)) is not None:  # a recorded call's own mask, as the inspector tells it
            meta["mask"] = mask
        out.write((", " if n else "") + _dumps(meta)[:-1] + ', "data": ')
        _write_tensor(stage.data, out)
        out.write("}")
    out.write("]}")


def trace_to_json(trace: Trace, stages: list[Stage] | None = None, params: bool | None = None) -> str:
    buffer = io.StringIO()
    write_trace_json(trace, buffer, stages, params)
    return buffer.getvalue()


def write_npz(stages: list[Stage], path: Path) -> None:
    """Numpy arrays, one per stage (named by its place), in one .npz; a lazy stage is written by row blocks.

    Only stages: `np.load(path)` keys are the stages' places, nothing else (the layers' geometry and the step
    axis travel in the JSON export's header).

    An .npz is a zip of .npy files: each is written block by block into a memory-mapped
    .npy first, so a 16k × 16k stage never has to fit in memory.
    """
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive, \
            tempfile.TemporaryDirectory(dir=path.parent, prefix=".attn-tui-", suffix=".part",
                                        ignore_cleanup_errors=True) as scratch, \
            partial(Path(scratch)):  # on the disk whose room was checked; removed on a signal too
        for stage in stages:
            member = Path(scratch) / "stage.npy"
            array = np.lib.format.open_memmap(member, mode="w+", dtype=np.float64, shape=stage.shape)
            start = 0
            for block in _blocks(stage.data) if stage.data.dim() else [stage.tensor[None]]:
                rows = block.to("cpu", torch.float64).numpy().reshape(-1, *stage.shape[1:])
                array[start:start + rows.shape[0]] = rows
                start += rows.shape[0]
            array.flush()
            del array
            archive.write(member, f"{printable(stage.key)}.npy")  # a recorded module's name is the file's text


def write_csv(stage: Stage, out: TextIO) -> None:
    """A stage as CSV with its axis labels: a header of column labels, one labelled row per row.

    A 3-D stage (an energy) gets one row per (query, key) pair; rows are written a block
    at a time, so a lazy stage is never held whole. Labels are user text: one a spreadsheet
    would read as a formula is written as text (see `_label`), and a control or bidi character
    is drawn as a visible symbol (`printable`), as the table draws it. CSV has no escape for
    them, and a file printed later (`cat`, a pipe into a pager) would hand them to a terminal;
    the JSON export keeps them exact, as `\\u` escapes.
    """
    write = csv.writer(out).writerow
    axes = [replace(a, labels=tuple(_label(printable(t)) for t in a.labels)) for a in stage.axes]
    if stage.data.dim() <= 1:
        write(["", *(axes[0].labels if axes else ("value",))])
        write(["", *(repr(v) for v in stage.tensor.detach().double().reshape(-1).tolist())])
        return
    lead = [a.name for a in axes[:-1]]
    write([*lead, *axes[-1].labels])
    row = 0
    for block in _blocks(stage.data):
        values = block.to("cpu", torch.float64)
        for first in values.tolist():
            labels = axes[0].labels[row]
            if values.dim() == 3:
                for key, cells in zip(axes[1].labels, first):
                    write([labels, key, *map(repr, cells)])
            else:
                write([labels, *map(repr, first)])
            row += 1


def _label(text: str) -> str:
    """A label a spreadsheet will show as text: one that starts as a formula would (=, +, -, @, tab or
    carriage return; a token such as `=HYPERLINK(…)`) gets a leading apostrophe, as OWASP advises."""
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


def stage_to_csv(stage: Stage) -> str:
    buffer = io.StringIO()
    write_csv(stage, buffer)
    return buffer.getvalue()


def file_name(stage: Stage) -> str:
    """A stage's key as a file name (`blocks.0.attn.weights@h1.csv`), safe on every file system."""
    return "".join(c if c.isalnum() or c in "._@-" else "_" for c in stage.key)


CSV_BYTES_PER_NUMBER = 22  # repr of a float64 and its comma
NPZ_BYTES_PER_NUMBER = 8  # float64, stored


def output_size(trace: Trace, stages: list[Stage], fmt: str, params: bool | None = None) -> int:
    """About how many bytes `export` will write: checked against the free disk space before a byte is written."""
    numbers = sum(math.prod(stage.shape) for stage in stages)
    if fmt == "json":
        include = params_are_small(trace) if params is None else params
        numbers += sum(t.numel() for t in trace.params.values()) if include else 0
        numbers += sum(trace.inputs[name].numel() for name in inputs_of(trace, stages))  # as write_trace_json
        numbers += sum(mask_numbers(trace, stage) for stage in stages)  # each recorded call's own mask
        return numbers * JSON_BYTES_PER_NUMBER
    return numbers * (NPZ_BYTES_PER_NUMBER if fmt == "npz" else CSV_BYTES_PER_NUMBER)


def _check_room(folder: Path, size: int, what: str | Msg, path: Path) -> None:
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return  # a file system that cannot say: the write itself will tell
    if size > free:
        raise InputError(Msg("cannot write {what} to {path}: it would take about {size} and {free} is free there",
                             what=what, path=quoted(str(path)), size=format_bytes(size), free=format_bytes(free)))


def _text(writer: Callable[[TextIO], None]) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        with path.open("w", encoding="utf-8", newline="") as out:
            writer(out)
    return write


def export(trace: Trace, stages: list[Stage], fmt: str, path: Path, params: bool | None = None,
           what: str | Msg | None = None) -> Path:
    """Write `stages` of `trace` to `path` as json, npz or csv; what was written is returned.

    CSV holds one matrix: one stage goes to `path` itself (or into it, when it is a folder),
    several to a folder `path` with one file per stage. JSON and .npz hold any number of
    stages in one file. The target is checked, and the disk's free space, before anything is
    written; every file is written beside its place and renamed into it, so a failure leaves
    no half-written file; any error of the file system is one InputError naming the path.
    """
    if fmt not in ("json", "npz", "csv"):
        raise ConfigError(Msg("unknown format {fmt}; choose json, npz or csv", fmt=repr(fmt)))
    what = Msg("the output") if what is None else what
    folder = fmt == "csv" and (len(stages) > 1 or path.is_dir())
    (writable_folder if folder else writable_file)(path, what)
    _check_room(path if path.is_dir() else path.parent if str(path.parent) else Path("."),
                output_size(trace, stages, fmt, params), what, path)
    try:
        if fmt == "json":
            def write_json(out: TextIO) -> None:
                write_trace_json(trace, out, stages, params)
                out.write("\n")
            write_atomic(path, _text(write_json))
        elif fmt == "npz":
            write_atomic(path, lambda partial: write_npz(stages, partial))
        elif folder:
            path.mkdir(exist_ok=True)
            for stage in stages:
                write_atomic(path / (file_name(stage) + ".csv"), _text(functools.partial(write_csv, stage)))
        else:
            write_atomic(path, _text(functools.partial(write_csv, stages[0])))
    except OSError as exc:
        raise InputError(Msg("cannot write {what} to {path}: {reason}", what=what, path=quoted(str(path)),
                             reason=exc.strerror or exc)) from None
    return path
