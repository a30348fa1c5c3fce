"""A model whose layers accelerate offloaded: where each layer is, a private folder for it, and its weights read
back into memory for as long as one layer is traced.

accelerate (`device_map="auto"`) leaves an offloaded module's parameters on the meta device
and reads them in with its hook's `pre_forward` when the module runs, dropping them in
`post_forward`; the tracer reads a layer's weights by attribute, outside any forward, so
`materialised` runs those same hook methods around it. Nothing here moves a tensor itself.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import torch

OFFLOADED = ("cpu", "disk")  # where accelerate puts what it offloads (cpu only when the model runs on a GPU)
# An offloaded model's hooks hold state (weights read in, then dropped): a forward pass in one worker and a layer
# traced in another take turns, so neither finds a weight dropped under it.
HOOKS = threading.RLock()


def layer_list(model: torch.nn.Module, blocks: str, layers: int) -> str | None:
    """`blocks`, where its family says the model keeps its layers (`layers`, `encoder.layer`, `h`), when the model
    holds a list of `layers` blocks there; None otherwise."""
    try:
        found = model.get_submodule(blocks)
    except AttributeError:
        return None
    return blocks if isinstance(found, torch.nn.ModuleList) and len(found) == layers else None


def placement(device_map: dict[str, Any], blocks: str | None, layers: int, main: str) -> tuple[str, ...]:
    """Where each layer's weights live: "" (on the device it runs on), "cpu" or "disk".

    `device_map` is accelerate's: a module name ("" for the whole model) → a device. A layer
    is offloaded when its block, or any part of it, or a module above it, is mapped off the
    main device; disk wins over cpu when its parts differ.
    """
    found = []
    for index in range(layers):
        path = f"{blocks}.{index}" if blocks else str(index)
        places = {str(device) for key, device in device_map.items()
                  if key == "" or path == key or path.startswith(key + ".") or key.startswith(path + ".")}
        off = [p for p in OFFLOADED if p in places and p != main]
        found.append("disk" if "disk" in off else off[0] if off else "")
    return tuple(found)


def _offloaded_hook(module: torch.nn.Module) -> Any | None:
    """The module's accelerate hook where it keeps the module's own weights off the device (as
    `accelerate.utils.has_offloaded_params` tells, which older accelerate lacks)."""
    from accelerate.hooks import AlignDevicesHook

    hook = getattr(module, "_hf_hook", None)
    return hook if isinstance(hook, AlignDevicesHook) and hook.offload else None


@contextmanager
def materialised(model: torch.nn.Module, blocks: str | None, index: int) -> Iterator[None]:
    """Within the block, layer `index`'s offloaded weights are in memory on its execution device; after it, they
    are let go again (back on the meta device), so a trace holds one offloaded layer at a time.

    Each offloaded module's own hook reads its weights in (`pre_forward`) and keeps them while
    the layer is traced: a module the adapter calls (a norm) does not drop them midway.
    """
    if blocks is None or not getattr(model, "hf_device_map", None):
        yield
        return
    prefix = f"{blocks}.{index}"
    hooks = [(module, hook) for name, module in model.named_modules()
             if (name == prefix or name.startswith(prefix + ".")) and (hook := _offloaded_hook(module)) is not None]
    with HOOKS, ExitStack() as stack:
        for module, hook in hooks:
            hook.pre_forward(module)
            stack.callback(hook.post_forward, module, None)
            hook.offload = False  # a forward inside the block leaves the weights where they are
            stack.callback(setattr, hook, "offload", True)
        yield


def offload_folder(root: Path) -> Path:
    """A private folder for one process's offloaded weights under `root`, removed when the process ends;
    folders left by processes that are gone (killed) are removed first."""
    root.mkdir(parents=True, exist_ok=True)
    for stale in root.glob("*-*"):
        pid = stale.name.split("-", 1)[0]
        if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
            shutil.rmtree(stale, ignore_errors=True)
    made = Path(tempfile.mkdtemp(prefix=f"{os.getpid()}-", dir=root))  # mode 0700: this user's only
    atexit.register(shutil.rmtree, str(made), True)
    return made


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
