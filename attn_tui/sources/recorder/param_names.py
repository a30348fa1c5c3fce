"""What a recorded parameter is called: its name in the module that holds it (`self_attn.q_proj.weight`).

A leaf the recorder meets may be a layer's weight. Its name is looked up in the module of the
attention's scope, then in each module whose code is running, innermost first (a Linear's own
forward, mostly); each module's parameters are listed once per recording. Names found are kept for
the process too (`KNOWN`), so a model recorded again (a loop that records each step) is named without
walking the frames; a parameter gone, or met in another scope, is looked up afresh.
"""

from __future__ import annotations

import contextlib
import sys
import weakref

import torch

from attn_tui.sources.recorder.node import Scope
from attn_tui.sources.recorder.whose import PLUMBING, RECORDER, outside_mode

# id(parameter) → (a weak reference to it, the scope's owner, its name), across recordings
KNOWN: dict[int, tuple[weakref.ref[torch.Tensor], int, str]] = {}
MAX_KNOWN = 65536


class ParamNames:
    """The names one recording has found (id(parameter) → name) and the parameters of each module it asked."""

    def __init__(self) -> None:
        self._names: dict[int, str] = {}
        self._params_of: dict[int, dict[int, tuple[torch.Tensor, str]]] = {}  # id(module) → its parameters by id

    def name(self, tensor: torch.Tensor, scope: Scope | None) -> str | None:
        """The parameter's name; "" for an nn.Parameter no module holds; None for a tensor that only requires grad.
        Called by the recorder's `node_of` (the frames walked start where the code called torch)."""
        known = self._names.get(id(tensor))
        if known is not None:
            return known
        owner = scope.owner if scope is not None else 0
        before = KNOWN.get(id(tensor))  # an earlier recording of the same model found it already
        if before is not None and before[0]() is tensor and before[1] == owner:
            self._names[id(tensor)] = before[2]
            return before[2]
        found = self._find(tensor, scope)
        if found is None:
            return "" if isinstance(tensor, torch.nn.Parameter) else None  # a weight still, unnamed
        if len(KNOWN) >= MAX_KNOWN:
            KNOWN.clear()
        with contextlib.suppress(TypeError):  # a tensor that takes no weak reference is looked up each time
            KNOWN[id(tensor)] = (weakref.ref(tensor), owner, found)
        return found

    def _find(self, tensor: torch.Tensor, scope: Scope | None) -> str | None:
        # The modules checked in order: the scope's, then each module whose code is running, innermost first;
        # the walk up the frames stops at the first that holds the parameter (a Linear's own forward, mostly).
        seen: list[torch.nn.Module] = []
        first = scope.module if scope is not None else None
        if isinstance(first, torch.nn.Module):
            seen.append(first)
            found = self._named_in(first, tensor)
            if found is not None:
                return found
        frame = outside_mode(sys._getframe())  # past the mode's own frames (this, name, node_of, …)
        while frame is not None and len(seen) < 8:
            code = frame.f_code  # f_locals only where a `self` can be: it copies every local of the frame
            # (the recorder's own frames, flex_attention's wrapper among them, hold no module of the user's)
            if code not in PLUMBING and not code.co_filename.startswith(RECORDER) and (
                    "self" in code.co_varnames or "self" in code.co_cellvars):
                owner = frame.f_locals.get("self")
                if isinstance(owner, torch.nn.Module) and owner not in seen:
                    seen.append(owner)
                    found = self._named_in(owner, tensor)
                    if found is not None:
                        return found
            frame = frame.f_back
        return None

    def _named_in(self, module: torch.nn.Module, tensor: torch.Tensor) -> str | None:
        """The name `module` gives the parameter (kept for the rest of the recording), or None."""
        names = self._params_of.get(id(module))
        if names is None:  # each module's parameters listed once: a model has hundreds, met one by one
            names = self._params_of[id(module)] = {id(p): (p, str(n)) for n, p in module.named_parameters()}
        found = names.get(id(tensor))
        if found is not None and found[0] is tensor:
            self._names[id(tensor)] = found[1]
            return found[1]
        return None
