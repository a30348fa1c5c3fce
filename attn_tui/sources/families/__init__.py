"""Model families as adapters over one shared layer tracer (tracer.py).

A family is one module here that exports `FAMILY`: every fact about the family (the model_types it reads, its
sizes' names, its layer list and output projection, how its config and weights become a `LayerSpec`) is declared
there. The registry below finds the modules by walking this folder, so a new family is a new module.

A family module imports no torch at module level (its adapter functions import what they compute with), so the
folder check and the memory estimate read every family's facts before the app's first frame, torch still loading.
"""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_tui.sources.families.spec import Family


@cache
def families() -> dict[str, Family]:
    """Every family adapter by name: each module of this folder that declares a `FAMILY`."""
    from attn_tui.sources.families.spec import Family

    found: dict[str, Family] = {}
    for info in pkgutil.iter_modules(__path__):
        if info.ispkg:  # shared/: the tracer and the parts families build on
            continue
        family = getattr(importlib.import_module(f"{__name__}.{info.name}"), "FAMILY", None)
        if isinstance(family, Family):
            found[family.name] = family
    return found


@cache
def routing() -> dict[str, str]:
    """config.json's model_type → the family that reads it; a model_type two families claim is refused."""
    found: dict[str, str] = {}
    for family in families().values():
        for model_type in family.reads:
            if model_type in found:
                raise TypeError(f"model_type {model_type!r} is read by {found[model_type]} and {family.name}")
            found[model_type] = family.name
    return found


def family_named(name: str) -> Family:
    """The adapter of a family by its name (LoadedModel.family)."""
    return families()[name]


def family_for(model_type: str) -> Family | None:
    """The adapter that reads a config of this `model_type`, or None when no family traces it."""
    name = routing().get(model_type)
    return None if name is None else families()[name]


def supported_types() -> list[str]:
    """Every model_type a family reads, sorted (what a refusal lists)."""
    return sorted(routing())
