"""Resolve `auto`/`cpu`/`cuda` and dtype names, with errors a person can act on."""

from __future__ import annotations

import torch

from attn_tui.core.errors import DeviceError
from attn_tui.core.settings import DEVICE_NAMES as DEVICES

DTYPES = {
    "float32": torch.float32,
    "float64": torch.float64,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
}


def resolve_device(name: str) -> torch.device:
    """`auto` picks CUDA when this torch build sees a GPU, else the CPU."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda" or name.startswith("cuda:"):
        if not torch.cuda.is_available():
            build = "a CPU-only build" if torch.version.cuda is None else f"built for CUDA {torch.version.cuda}"
            raise DeviceError(f"CUDA was asked for but none is available (torch {torch.__version__}, "
                              f"{build}); choose the cpu or auto device")
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise DeviceError(f"{name} was asked for but only {torch.cuda.device_count()} CUDA device(s) exist")
        return torch.device(name)
    raise DeviceError(f"unknown device {name!r}; choose one of {', '.join(DEVICES)}")


def resolve_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise DeviceError(f"unknown dtype {name!r}; choose one of {', '.join(DTYPES)}") from None
