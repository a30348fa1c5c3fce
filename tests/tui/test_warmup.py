"""Start-up's warm-up: torch's libraries opened without importing torch, the collector held off and given back."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from attn_tui.tui.startup import START_THRESHOLDS, Warmup, torch_library
from tests.limits import limit

ROOT = Path(__file__).resolve().parents[2]
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="dlopen and /proc/self/maps are Linux's")


def _run(code: str) -> None:
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=limit(120))
    assert done.returncode == 0, done.stderr[-2000:]


@linux
def test_the_library_is_the_one_import_torch_loads() -> None:
    path = torch_library()
    assert path is not None and path.parent.parent == Path(torch.__file__).parent


@linux
def test_begin_opens_libtorch_without_importing_torch_and_end_gives_the_collector_back() -> None:
    _run(f"""
import gc, sys
from attn_tui.tui.startup import Warmup
own = gc.get_threshold()
warmup = Warmup()
warmup.begin()
assert gc.get_threshold() == {START_THRESHOLDS!r}, gc.get_threshold()
warmup.opening.join()
assert "libtorch_cpu.so" in open("/proc/self/maps").read()
assert "torch" not in sys.modules
import torch
assert torch.ones(3).sum().item() == 3  # the import finds the opened libraries and works with them
warmup.end()
assert gc.get_threshold() == own
""")


def test_a_later_start_in_the_same_process_changes_nothing() -> None:
    own = gc.get_threshold()  # torch is imported here already
    warmup = Warmup()
    warmup.begin()
    assert warmup.opening is None and gc.get_threshold() == own
    warmup.end()
    assert gc.get_threshold() == own


@pytest.mark.slow
def test_the_app_gives_the_collector_back_once_the_first_heatmap_is_painted() -> None:
    _run("""
import gc
from attn_tui.tui.app import AttnApp
own = gc.get_threshold()
seen = []

class First(AttnApp):
    def compose(self):
        yield from super().compose()
        seen.append(gc.get_threshold())

    def watch_shown(self, old, shown):
        super().watch_shown(old, shown)
        self.call_after_refresh(lambda: self.call_after_refresh(lambda: (seen.append(gc.get_threshold()), self.exit())))

First().run(headless=True, size=(100, 32))
assert seen[0] != own and seen[-1] == own, (seen, own)
""")


@linux
def test_what_cannot_be_opened_is_left_for_the_import_to_report(tmp_path: Path, monkeypatch) -> None:
    from attn_tui.tui import startup as warmup

    broken = tmp_path / "libtorch.so"
    broken.write_bytes(b"not an ELF file")
    warmup._open(broken)  # dlopen returns NULL: nothing raised in the thread, so nothing printed over the app
    monkeypatch.setattr(warmup.ctypes, "CDLL", lambda name: object())  # a libc without dlopen (glibc < 2.34)
    warmup._open(broken)
