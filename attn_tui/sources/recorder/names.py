"""What each recorded module is called in the trace: its path in the model it ran in, or its class.

Two models in one recording (a teacher and its student, a draft model run by `generate(assistant_model=…)`)
often share every path: `model.layers.0.self_attn` in both. The model whose attention ran first keeps its
plain paths; each other one's paths start with its class (`Qwen2ForCausalLM:model.layers.0.self_attn`),
numbered when it shares the class with a model before it (`LlamaForCausalLM#2:model.layers.0.self_attn`).
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from attn_tui.sources.recorder.capture import Recorder
from attn_tui.sources.recorder.found import Found
from attn_tui.sources.recorder.node import Scope


def _unwrapped(module: torch.nn.Module) -> torch.nn.Module:
    inner = getattr(module, "_orig_mod", None)  # torch.compile(model) wraps it: paths are the model's own
    return inner if isinstance(inner, torch.nn.Module) else module


def outermost(running: Iterable[torch.nn.Module]) -> list[tuple[torch.nn.Module, list[tuple[str, int]]]]:
    """The models no other of `running` holds, in the order given, each with (path, id) of every module in it.

    A module met inside a model listed before it is not walked again; one listed before the model that holds it
    (a layer run on its own, then the whole model) is walked, and dropped once that model is found to hold it.
    """
    inside: set[int] = set()
    walked: list[tuple[torch.nn.Module, list[tuple[str, int]]]] = []
    for module in running:
        if id(module) in inside:
            continue
        model = _unwrapped(module)
        members = [(path, id(member)) for path, member in model.named_modules() if path]
        inside.update(member for _, member in members)
        if model is not module:  # the compiled wrapper stands for the model it wraps
            inside.add(id(model))
        walked.append((module, members))
    return [(module, members) for module, members in walked if id(module) not in inside]


def module_paths(recorder: Recorder, scopes: Iterable[Scope] = ()) -> dict[int, str]:
    """id(module) → its path in the outermost model it ran in (`model.layers.3.self_attn`); a root has none.

    Of the models that hold one of `scopes`, the first keeps its plain paths, the others say which model they
    are in (see the module docstring): two models' layers never share a name, so never a place in the trace.
    """
    owner: dict[int, int] = {}  # id(module) → which model (its place in `models`) holds it
    paths: dict[int, str] = {}
    models = outermost(recorder.roots.values())
    for n, (_, members) in enumerate(models):
        for path, member in members:
            if member not in paths:
                paths[member] = path
                owner[member] = n
    holding = sorted({owner[id(s.module)] for s in scopes if s.module is not None and id(s.module) in owner})
    prefix: dict[int, str] = {}
    classes: dict[str, int] = {}
    for rank, n in enumerate(holding):
        name = type(_unwrapped(models[n][0])).__name__
        classes[name] = classes.get(name, 0) + 1
        if rank > 0:
            prefix[n] = name if classes[name] == 1 else f"{name}#{classes[name]}"
    return {member: f"{prefix[owner[member]]}:{path}" if owner[member] in prefix else path
            for member, path in paths.items()}


def module_names(founds: list[Found], paths: dict[int, str] | None = None) -> dict[Scope, str]:
    """Each module by its path in the model it ran in (`model.layers.3.self_attn`), when that path says more than
    its class: it is nested deeper than a child, it is in a second model, or another module of its class was
    recorded too. Else (a learner's decoder's `attention`, a module run on its own, a function) by its name,
    numbered when several share it."""
    names: dict[Scope, str] = {}
    counts: dict[str, int] = {}
    classes: dict[str, int] = {}
    for scope in {found.scope: None for found in founds}:
        classes[scope.name] = classes.get(scope.name, 0) + 1
    chosen = {}
    for scope in {found.scope: None for found in founds}:
        path = (paths or {}).get(id(scope.module)) if scope.module is not None else None
        if path is not None and ("." in path or ":" in path or classes[scope.name] > 1):
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
