"""Whose code a frame is: the user's (recorded), attn-tui's own (never recorded), or a library's (looked past)."""

from __future__ import annotations

import functools
import os
import sysconfig

import torch


def _library_roots() -> tuple[str, ...]:
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # attn_tui/
    roots = {os.path.dirname(torch.__file__), package}
    for key in ("stdlib", "platstdlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            roots.add(path)
    return tuple(os.path.realpath(root) + os.sep for root in roots)


_ROOTS: tuple[str, ...] | None = None
_SAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "samples")


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """Code the user wrote: not torch, not attn-tui (its shipped sample scripts excepted), not the standard library.

    Cached by file name: every recorded call asks this of every frame above it, and
    `realpath` walks the file system each time (a loop of 10,000 calls took minutes).
    """
    global _ROOTS
    if _ROOTS is None:
        _ROOTS = _library_roots()
    if filename.startswith("<"):  # <stdin>, <string>, <console>, <ipython-input-…> are typed code; <frozen …> is not
        return not filename.startswith("<frozen")
    real = os.path.realpath(filename)
    if real.startswith(os.path.realpath(_SAMPLES) + os.sep):
        return True
    return not real.startswith(_ROOTS)


_CAPTURE = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "capture.py"))
_PACKAGE = os.path.realpath(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))) + os.sep


@functools.lru_cache(maxsize=4096)
def is_own_file(filename: str) -> bool:
    """attn-tui's own code (its samples and this recorder excepted): what it computes is never the user's attention."""
    real = os.path.realpath(filename)
    return real.startswith(_PACKAGE) and not is_user_file(filename) and real != _CAPTURE
