"""What start-up can save beside a GIL-holding `import torch`: torch's native libraries opened off
the GIL, and the cyclic garbage collector kept out of the way while the app and torch build what
they keep.

`import torch` holds the GIL throughout, so a thread importing it only takes turns with the UI.
About a fifth of that import, though, is the dynamic linker mapping and relocating
libtorch_cpu, and that part needs no Python: `dlopen` called through ctypes runs with the GIL
released, on the other core, while the first frame is drawn. When `import torch` opens the same
libraries later they are already there. Nothing of torch is imported here, and a failure is
left for the real import to report.

Start-up allocates a few hundred thousand objects that live as long as the app (Textual's DOM,
torch's modules). With the default thresholds the collector walks them again and again as they
are made: on 2 cores, about 0.2 s of the 1.4 s to the first heatmap. Until the first
heatmap is painted, young objects are collected rarely; then the usual thresholds come back.
Nothing is frozen (`gc.freeze`): the first trace, a loaded model or a recorded trace may sit in
a reference cycle, and frozen it would never be freed.
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import os
import sys
import threading
from pathlib import Path

START_THRESHOLDS = (100_000, 50, 1_000)  # gc thresholds while starting: young objects collected ~140× less often


def torch_library() -> Path | None:
    """libtorch.so of the torch that `import torch` would find (it needs every native part of torch), or None."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec is not None else []:
        path = Path(folder) / "lib" / "libtorch.so"
        if path.is_file():
            return path
    return None


def _open(path: Path) -> None:
    """dlopen `path`; quietly nothing where libc has no dlopen to call (a thread's error would print over the app)."""
    try:
        dlopen = ctypes.CDLL(None).dlopen  # a foreign call through CDLL: the GIL is released while it runs
    except (AttributeError, OSError):
        return
    dlopen.restype = ctypes.c_void_p
    dlopen.argtypes = [ctypes.c_char_p, ctypes.c_int]
    dlopen(os.fsencode(path), os.RTLD_NOW | os.RTLD_LOCAL)  # the flags Python opens extension modules with


class Warmup:
    """One app's start-up: `begin` as the first frame is composed, `end` once the first heatmap is painted.

    Only the first start in a process does anything: later apps (tests make many) find torch imported.
    """

    def __init__(self) -> None:
        self.thresholds: tuple[int, int, int] | None = None  # the collector's own, while ours are set
        self.opening: threading.Thread | None = None  # the thread opening torch's libraries

    def begin(self) -> None:
        if "torch" in sys.modules or self.thresholds is not None:
            return
        self.thresholds = gc.get_threshold()
        gc.set_threshold(*START_THRESHOLDS)
        path = torch_library() if sys.platform.startswith("linux") else None
        if path is not None:
            self.opening = threading.Thread(target=_open, args=(path,), name="open-torch-libraries", daemon=True)
            self.opening.start()

    def end(self) -> None:
        if self.thresholds is None:
            return
        gc.set_threshold(*self.thresholds)
        self.thresholds = None
