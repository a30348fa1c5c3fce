"""Trace → JSON / .npy / .csv, so anything shown can be checked or recomputed elsewhere.

JSON has no infinities or NaN, so those become the strings "inf", "-inf", "nan" and the
document stays standard JSON that any parser reads.
"""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import numpy as np
import torch

from attn_tui.core.errors import ConfigError
from attn_tui.core.stage import Stage, Trace


def _plain(tensor: torch.Tensor) -> object:
    """Nested lists of floats, with non-finite numbers spelled as strings."""
    values = tensor.detach().to(device="cpu", dtype=torch.float64).tolist()
    return _spell(values)


def _spell(value: object) -> object:
    if isinstance(value, list):
        return [_spell(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def select_stages(trace: Trace, name: str | None = None, head: int | None = None) -> list[Stage]:
    """The stages to print: all, one name, one head; unknown names list the valid ones."""
    stages = trace.stages
    if name is not None:
        if name not in trace.names():
            raise ConfigError(f"variant {trace.variant!r} has no stage {name!r} here; "
                              f"its stages are: {', '.join(trace.names())}")
        stages = [s for s in stages if s.name == name]
    if head is not None:
        if trace.variant != "multihead":
            raise ConfigError("--head applies to multihead only")
        if head >= trace.heads:
            raise ConfigError(f"--head {head} is out of range: there are {trace.heads} heads (0…{trace.heads - 1})")
        stages = [s for s in stages if s.head in (None, head)]
    return stages


def stage_dict(stage: Stage) -> dict[str, object]:
    return {
        "name": stage.name,
        "head": stage.head,
        "step": stage.step,
        "formula": stage.formula,
        "shape": list(stage.shape),
        "axes": [{"name": a.name, "labels": list(a.labels)} for a in stage.axes],
        "data": _plain(stage.tensor),
    }


def trace_dict(trace: Trace, stages: list[Stage] | None = None) -> dict[str, object]:
    extra = {"output": trace.config["output"]} if "output" in trace.config else {}
    return extra | {
        "variant": trace.variant,
        "device": trace.device,
        "dtype": trace.dtype,
        "tokens": {"query": list(trace.query_tokens), "key": list(trace.key_tokens)},
        "mask_convention": "1 = may attend, 0 = masked (torch SDPA)",
        "mask": None if trace.mask is None else trace.mask.to("cpu", torch.int64).tolist(),
        "settings": {k: v for k, v in trace.config.items() if k != "vocab"},
        "vocab": trace.config.get("vocab"),
        "inputs": {name: _plain(t) for name, t in trace.inputs.items()},
        "params": {name: _plain(t) for name, t in trace.params.items()},
        "warnings": list(trace.warnings),
        "stages": [stage_dict(s) for s in (trace.stages if stages is None else stages)],
    }


def trace_to_json(trace: Trace, stages: list[Stage] | None = None, indent: int | None = None) -> str:
    return json.dumps(trace_dict(trace, stages), ensure_ascii=False, indent=indent, allow_nan=False)


def save_npy(stage: Stage, path: Path) -> None:
    np.save(path, stage.tensor.detach().to("cpu", torch.float64).numpy())


def stage_to_csv(stage: Stage) -> str:
    """A 1-D or 2-D stage as CSV with its axis labels as the header and first column."""
    if stage.tensor.dim() > 2:
        raise ConfigError(f"stage {stage.key} is {stage.tensor.dim()}-D; CSV holds 1-D or 2-D stages")
    data = stage.tensor.detach().to("cpu", torch.float64)
    rows = data.reshape(-1, data.shape[-1]).tolist() if data.dim() else [[data.item()]]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    col_labels = stage.axes[-1].labels if stage.axes else ("value",)
    row_labels = stage.axes[0].labels if data.dim() == 2 else ("",)
    writer.writerow([stage.axes[0].name if data.dim() == 2 else "", *col_labels])
    for label, row in zip(row_labels, rows):
        writer.writerow([label, *(repr(v) for v in row)])
    return buffer.getvalue()
