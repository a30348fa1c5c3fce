"""What each recorded module is called in the trace: its path in the model it ran in, or its class."""

from __future__ import annotations

import torch

from attn_tui.sources.recorder.capture import Recorder
from attn_tui.sources.recorder.found import Found
from attn_tui.sources.recorder.node import Scope


def module_paths(recorder: Recorder) -> dict[int, str]:
    """id(module) → its path in the outermost module it ran in (`model.layers.3.self_attn`); a root has none."""
    paths: dict[int, str] = {}
    for root in recorder.roots.values():
        inner = getattr(root, "_orig_mod", None)  # torch.compile(model) wraps it: paths are the model's own
        for path, module in (inner if isinstance(inner, torch.nn.Module) else root).named_modules():
            if path:
                paths.setdefault(id(module), path)
    return paths


def module_names(founds: list[Found], paths: dict[int, str] | None = None) -> dict[Scope, str]:
    """Each module by its path in the model it ran in (`model.layers.3.self_attn`), when that path says more than
    its class: it is nested deeper than a child, or another module of its class was recorded too. Else (a learner's
    decoder's `attention`, a module run on its own, a function) by its name, numbered when several share it."""
    names: dict[Scope, str] = {}
    counts: dict[str, int] = {}
    classes: dict[str, int] = {}
    for scope in {found.scope: None for found in founds}:
        classes[scope.name] = classes.get(scope.name, 0) + 1
    chosen = {}
    for scope in {found.scope: None for found in founds}:
        path = (paths or {}).get(id(scope.module)) if scope.module is not None else None
        if path is not None and ("." in path or classes[scope.name] > 1):
            chosen[scope] = path
    taken = set(chosen.values())
    for found in founds:
        if found.scope in names:
            continue
        if found.scope in chosen:
            names[found.scope] = chosen[found.scope]
            continue
        counts[found.scope.name] = counts.get(found.scope.name, 0) + 1
        n = counts[found.scope.name]
        name = found.scope.name if n == 1 else f"{found.scope.name}#{n}"
        while name in taken:
            n += 1
            name = f"{found.scope.name}#{n}"
        counts[found.scope.name] = n
        names[found.scope] = name
        taken.add(name)
    return names
