"""Resolve `auto`/`cpu`/`cuda` and dtype names, with errors a person can act on."""

from __future__ import annotations

import torch

from attn_tui.ask.settings import DEVICE_NAMES as DEVICES
from attn_tui.errors import DeviceError
from attn_tui.i18n import Msg, Plural

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
            build = Msg("a CPU-only build") if torch.version.cuda is None else Msg("built for CUDA {version}",
                                                                                 version=torch.version.cuda)
            raise DeviceError(Msg("CUDA was asked for but none is available (torch {torch}, {build}); choose the cpu "
                                  "or auto device", torch=torch.__version__, build=build))
        index = int(name.partition(":")[2] or 0)
        if index >= torch.cuda.device_count():
            raise DeviceError(Plural("{name} was asked for but only {n} CUDA device exists",
                                     "{name} was asked for but only {n} CUDA devices exist", name=name,
                                     n=torch.cuda.device_count()))
        return torch.device(name)
    raise DeviceError(Msg("unknown device {name}; choose one of {names}", name=repr(name), names=", ".join(DEVICES)))


def resolve_dtype(name: str) -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise DeviceError(Msg("unknown dtype {name}; choose one of {names}", name=repr(name),
                              names=", ".join(DTYPES))) from None
