"""Whose code a frame is: the user's (recorded), attn-tui's own (never recorded), or a library's (looked past);
and the walk up the frames of a torch call that finds the user's line and the module it ran in.

Where code comes from is judged here once, by the folder of its file (`author_of`); every question the recorder
asks of a file is put to that one answer: whose line a recorded call comes from (`is_user_file`: the user's
own files, not an installed package's), which calls are attn-tui's own (`is_own_file`), which threads are a
library's helpers (`is_library_file`).
"""

from __future__ import annotations

import enum
import functools
import inspect
import linecache
import os
import sysconfig
import threading
from types import FrameType

import torch

from attn_tui.sources.recorder.node import Origin, Scope

MODULE_SEARCH = 48  # frames above the user's line searched for the module that runs it
MAX_DEPTH = 1000  # frames searched for the user's line at all (library code calling torch from deep inside)


class Author(enum.Enum):
    """Who wrote a file's code."""

    USER = "the user"  # anything below no root here: the user's files, typed code (<stdin>), attn-tui's samples
    INSTALLED = "an installed package"  # site-packages (transformers, tqdm), torch excepted
    TORCH = "torch"
    INTERPRETER = "the interpreter"  # the standard library, frozen modules
    ATTN_TUI = "attn-tui"


RECORDED = frozenset({Author.USER})  # whose line a recorded call is said to come from


def _package() -> str:
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # attn_tui/


@functools.cache  # made when first asked: sysconfig reads its data then
def _roots() -> tuple[tuple[str, Author], ...]:
    """Each folder whose files have one author, the deepest first: torch lies in site-packages, attn-tui's samples
    in attn-tui, and site-packages in the standard library's folder where Python is installed without a venv."""
    paths = sysconfig.get_paths()
    roots = {os.path.join(_package(), "samples"): Author.USER, _package(): Author.ATTN_TUI,
             os.path.dirname(torch.__file__): Author.TORCH}
    for key, author in (("purelib", Author.INSTALLED), ("platlib", Author.INSTALLED),
                        ("stdlib", Author.INTERPRETER), ("platstdlib", Author.INTERPRETER)):
        path = paths.get(key)
        if path:
            roots.setdefault(path, author)
    real = {os.path.realpath(root) + os.sep: author for root, author in roots.items()}
    return tuple(sorted(real.items(), key=lambda item: -len(item[0])))


@functools.lru_cache(maxsize=4096)
def author_of(filename: str) -> Author:
    """Who wrote the code of `filename` (a code object's `co_filename`).

    Cached by file name: every recorded call asks this of every frame above it, and `realpath` walks the file
    system each time (a loop of 10,000 calls took minutes).
    """
    if filename.startswith("<"):  # <stdin>, <string>, <console>, <ipython-input-…> are typed code; <frozen …> is not
        return Author.INTERPRETER if filename.startswith("<frozen") else Author.USER
    real = _realpath(filename)
    for root, author in _roots():
        if real.startswith(root):
            return author
    return Author.USER


@functools.lru_cache(maxsize=4096)
def is_user_file(filename: str) -> bool:
    """Code the user wrote, whose line a recorded call is said to come from: an installed package's frames (a
    transformers model's modeling file) are looked past to the user's line that called the model, as torch's,
    the interpreter's and attn-tui's are (its shipped samples excepted, which stand for the user's code)."""
    return author_of(filename) in RECORDED


def is_library_file(filename: str) -> bool:
    """Code the user did not write: the interpreter's, torch's, an installed package's or attn-tui's."""
    return author_of(filename) is not Author.USER


def _realpath(filename: str) -> str:
    """`os.path.realpath`, with each folder resolved once: the first recording asks about every loaded
    module's file (thousands, in a few hundred folders), and realpath stats each part of each path."""
    if os.path.islink(filename):
        return os.path.realpath(filename)
    folder, name = os.path.split(filename)
    return os.path.join(_real_folder(folder), name) if name not in ("", ".", "..") else os.path.realpath(filename)


@functools.lru_cache(maxsize=1024)
def _real_folder(folder: str) -> str:
    return os.path.realpath(folder)


_CAPTURE = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "capture.py"))


@functools.lru_cache(maxsize=4096)
def is_own_file(filename: str) -> bool:
    """attn-tui's own code (its samples and the mode's own module excepted): what it computes is never the user's
    attention."""
    return author_of(filename) is Author.ATTN_TUI and _realpath(filename) != _CAPTURE


RECORDER = os.path.dirname(__file__) + os.sep  # the recorder's folder, as its code objects name their files
# The mode's own modules: their frames lie between a torch call and the question where it came from (the mode's
# `__torch_function__` and what it calls, a parameter's name looked up). As their code objects name them.
MODE_FILES = frozenset(os.path.join(os.path.dirname(__file__), name)
                       for name in ("capture.py", "param_names.py", "whose.py"))


def outside_mode(frame: FrameType | None) -> FrameType | None:
    """The first frame, from `frame` outwards, that is not the mode's own: from the frame that asks
    (`sys._getframe()`), the code that called torch (or handed a call in), however many of the mode's frames lie
    between."""
    while frame is not None and frame.f_code.co_filename in MODE_FILES:
        frame = frame.f_back
    return frame


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
    return _origin(frame.f_code.co_filename, frame.f_lineno)


@functools.lru_cache(maxsize=4096)
def _origin(filename: str, line: int) -> Origin:
    """One Origin per line: a model's forward asks for the same few lines on every call (linecache keeps a file
    as first read as well)."""
    return Origin(filename, line, linecache.getline(filename, line).strip())


class _Chain:
    """The frames the last walks passed before they found anything, outermost first, each with what a walk
    from it finds: the frames above a frame never change while it runs, so a later walk that reaches one of
    them stops there. Truncated to the frame a walk meets, it holds only frames of the stack now running
    (no frame's locals are kept alive past its call); emptied when a recording ends."""

    def __init__(self) -> None:
        self.frames: list[FrameType] = []
        self.found: list[tuple[FrameType | None, Scope | None] | None] = []  # None: attn-tui's own call
        self.index: dict[int, int] = {}  # id(frame) → its place in `frames`

    def at(self, frame: FrameType) -> int | None:
        place = self.index.get(id(frame))
        return place if place is not None and place < len(self.frames) and self.frames[place] is frame else None

    def keep(self, place: int | None, fresh: list[FrameType],
             found: tuple[FrameType | None, Scope | None] | None) -> None:
        """Cut the chain after `place` (the frame this walk met; None: none) and add `fresh` (innermost first)."""
        cut = 0 if place is None else place + 1
        for frame in self.frames[cut:]:
            self.index.pop(id(frame), None)
        del self.frames[cut:], self.found[cut:]
        for frame in reversed(fresh):
            self.index[id(frame)] = len(self.frames)
            self.frames.append(frame)
            self.found.append(found)

    def clear(self) -> None:
        self.frames.clear()
        self.found.clear()
        self.index.clear()


CHAINS: dict[int, _Chain] = {}  # one per thread (each walks its own stack); emptied when a recording ends


def _chain() -> _Chain:
    ident = threading.get_ident()
    chain = CHAINS.get(ident)
    if chain is None:
        chain = CHAINS[ident] = _Chain()
    return chain


def walk(frame: FrameType | None) -> tuple[FrameType | None, Scope | None]:
    """Up from `frame`: the user's frame that made the call, and the attention module (or function) it ran in.

    The frames passed before anything is found are remembered (`CHAINS`): a model's next torch call walks only
    up to the first of them it meets (reading a frame's `self` copies all its locals: most of a walk's cost).
    """
    fresh: list[FrameType] = []  # frames passed while nothing was found yet: what a walk from each finds is known
    place: int | None = None
    chain = _chain()
    found: tuple[FrameType | None, Scope | None] | None
    try:
        walked = _walk(frame, fresh, chain)
    except OwnCallError:
        chain.keep(None, fresh, None)
        raise
    if isinstance(walked, int):  # a frame of the chain was met before anything was found: the rest is known
        place = walked
        found = chain.found[place]
    else:
        found = walked
    chain.keep(place, fresh, found)
    if found is None:
        raise OwnCallError
    return found


def forget_walks() -> None:
    """Drop every frame the walks keep (the last walk, each thread's chain) and the lines read: a recording ended."""
    LAST_WALK[0] = None
    for chain in list(CHAINS.values()):
        chain.clear()
    CHAINS.clear()
    _origin.cache_clear()  # the next recording reads its lines anew (a script edited between two runs)


def _walk(frame: FrameType | None, fresh: list[FrameType],
          chain: _Chain) -> tuple[FrameType | None, Scope | None] | int:
    """What `walk` finds, or the place in `chain` of the first of its frames met before anything was found."""
    user_frame = module_frame = None
    budget = MODULE_SEARCH  # frames looked at past the user's line: a deep recursion must not cost its depth
    depth = 0
    while frame is not None and budget > 0 and depth < MAX_DEPTH:
        depth += 1
        if user_frame is not None:
            budget -= 1
        code = frame.f_code
        if user_frame is None and module_frame is None:
            place = chain.at(frame)
            if place is not None:
                return place
            if not code.co_flags & SUSPENDS:  # a generator's callers change between its resumptions
                fresh.append(frame)
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
