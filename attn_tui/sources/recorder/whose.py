"""Whose code a frame is: the user's (recorded), attn-tui's own (never recorded), or a library's (looked past);
and the walk up the frames of a torch call that finds the user's line and the module it ran in."""

from __future__ import annotations

import functools
import inspect
import linecache
import os
import sysconfig
from types import FrameType

import torch

from attn_tui.sources.recorder.node import Origin, Scope

MODULE_SEARCH = 48  # frames above the user's line searched for the module that runs it
MAX_DEPTH = 1000  # frames searched for the user's line at all (library code calling torch from deep inside)


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


class OwnCallError(Exception):
    """The call was made by attn-tui itself (a trace built, a variant computed inside a recorded block)."""


# The frames torch.nn.Module puts between a caller and a module's forward: no module is found in them.
PLUMBING = frozenset(getattr(getattr(torch.nn.Module, name, None), "__code__", None)
                      for name in ("_call_impl", "_wrapped_call_impl")) - {None}


SUSPENDS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR
LAST_WALK: list[tuple[FrameType, FrameType | None, Scope | None] | None] = [None]  # the last walk: (from, user, scope)


def origin_at(frame: FrameType | None) -> Origin | None:
    """The line a user's frame is at now."""
    if frame is None:
        return None
    code = frame.f_code
    return Origin(code.co_filename, frame.f_lineno, linecache.getline(code.co_filename, frame.f_lineno).strip())


def walk(frame: FrameType | None) -> tuple[FrameType | None, Scope | None]:
    """Up from `frame`: the user's frame that made the call, and the attention module (or function) it ran in."""
    user_frame = module_frame = None
    budget = MODULE_SEARCH  # frames looked at past the user's line: a deep recursion must not cost its depth
    depth = 0
    while frame is not None and budget > 0 and depth < MAX_DEPTH:
        depth += 1
        if user_frame is not None:
            budget -= 1
        code = frame.f_code
        # Only while the module is still looked for, and never in torch's own module plumbing (its `self` is the
        # module whose forward frame, just below, was looked at already): reading f_locals copies every local.
        owner = frame.f_locals.get("self") if module_frame is None and code not in PLUMBING and \
            ("self" in code.co_varnames or "self" in code.co_cellvars) else None
        user = is_user_file(code.co_filename)
        if user_frame is None and not user and is_own_file(code.co_filename):
            raise OwnCallError
        if module_frame is None and isinstance(owner, torch.nn.Module) and (
                user or "Attention" in type(owner).__name__):
            module_frame = frame
        if user and user_frame is None:
            user_frame = frame
        if module_frame is not None and user_frame is not None:
            break
        frame = frame.f_back
    if module_frame is None and user_frame is not None:
        module_frame = user_frame  # a plain function, called from no module
    if module_frame is None:
        return user_frame, None
    owner = module_frame.f_locals.get("self") if "self" in module_frame.f_code.co_varnames else None
    if isinstance(owner, torch.nn.Module):
        return user_frame, Scope(type(owner).__name__, id(owner), owner)
    code = module_frame.f_code
    name = code.co_name if code.co_name != "<module>" else "script"
    return user_frame, Scope(name, id(code))
